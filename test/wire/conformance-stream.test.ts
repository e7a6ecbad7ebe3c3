// Codec conformance, part 2: streams. For every codec of the registry and every whole-answer case
// (test/helpers/canonical-cases.ts):
//
// - Round trip: canonical events -> the codec's stream renderer -> SSE text (event() + end()) -> SseParser fed in
//   seeded random chunks of 1..9 bytes -> the codec's stream parser (frame() / end()) -> canonical events. The
//   assembled answer (text per block, reasoning and its opaque data, tool call id + name + arguments, stop reason,
//   final usage) equals the input after the codec's profile rules (test/fixtures/conformance/<format>.ts); the
//   parser is terminated; the events follow canonical.ts's block rules; usage reports are cumulative, so exactly
//   one value, the last, is effective; and the chunking does not change the events.
// - Errors: renderer.error(...) (and an error event) parsed back by the same codec gives an error event or a
//   stream that is not terminated, never a finish; which one is documented per codec (profile.streamError).
// - Cut streams: the SSE with its tail dropped (at a frame boundary, and inside a frame) is never terminated.
//
// What a canonical event cannot carry is left out of the input events (eventsOf): redacted reasoning and a tool
// call's signature.

import t from 'tap';
import { TollgateError } from '../../src/core/errors.js';
import type { CanonicalEvent, CanonicalResponse } from '../../src/wire/canonical.js';
import {
  applyRules, applyUsageRule, eventRuleBreaches, eventsOf, framesOf, parseFrames, registryCodecs, renderSse, responseCases,
  responseView, sseFrameTexts, streamView, usageReplacementBreaches, usageTotal,
} from '../helpers/canonical-cases.js';
import { profileOf } from '../fixtures/conformance/index.js';

const CODECS = registryCodecs();
const CLIENT_MODEL = 'client-model';

for (const { format, codec } of CODECS) {
  const { profile } = profileOf(format);

  for (const variant of profile.streamRenderers) {
    t.test(`${format}: stream round trip through ${variant.label}`, async (t) => {
      t.comment(`usage in this renderer: ${variant.usage} [${variant.cite}]`);
      for (const c of responseCases(profile)) {
        const events = eventsOf(c.response);
        const sse = renderSse(variant.make(codec, CLIENT_MODEL), events);
        const seed = `${format}|${variant.label}|${c.name}`;
        const parsed = parseFrames(codec, framesOf(sse, seed));
        t.equal(parsed.threw, null, `${c.name}: the parser reads the renderer's SSE`);
        t.equal(parsed.terminated, true, `${c.name}: the parser saw the format's terminal event`);
        t.strictSame(eventRuleBreaches(parsed.events), [], `${c.name}: the events follow the block rules of canonical.ts`);
        t.strictSame(usageReplacementBreaches(parsed.events), [], `${c.name}: every usage report carries the whole usage so far (the last one is effective)`);
        t.strictSame(parseFrames(codec, framesOf(sse, `${seed}|whole`, 1 << 20)).events, parsed.events, `${c.name}: the chunking does not change the events`);

        const sigOrigins = parsed.events.flatMap((e) => (e.type === 'reasoning_signature' ? [e.origin ?? '(none)'] : []));
        t.strictSame(sigOrigins, sigOrigins.map(() => profile.family), `${c.name}: the parser tags every reasoning signature with its family`);

        const start = parsed.events.find((e) => e.type === 'start');
        t.equal(start?.type === 'start' ? start.model : undefined, CLIENT_MODEL, `${c.name}: the start event names the model the renderer was given`);

        const expected: CanonicalResponse = {
          ...applyRules(profile.response, c.response),
          usage: variant.usage === 'none' ? null : applyUsageRule(profile.usage, c.response.usage),
        };
        const got = streamView(parsed.events, profile.opaqueEssence);
        t.strictSame(got, responseView(expected, profile.opaqueEssence), `${c.name}: the reassembled answer equals the input modulo the ${format} profile`);
        if (variant.usage === 'carried') t.equal(usageTotal(got.usage), usageTotal(c.response.usage), `${c.name}: the usage total is preserved`);
      }
    });
  }

  const variant = profile.streamRenderers[0]!;

  t.test(`${format}: a failed stream is an error or an unfinished stream, never a finish`, async (t) => {
    t.comment(`documented: ${profile.streamError.cite}`);
    const head: CanonicalEvent[] = [{ type: 'start', id: 'conf-err', model: 'upstream-model' }, { type: 'text_start', index: 0 }, { type: 'text_delta', index: 0, text: 'Partial answer' }];
    const message = 'the upstream stalled';
    const ways: [string, (r: ReturnType<typeof variant.make>) => string][] = [
      ['renderer.error()', (r) => r.error('TOLLGATE_ERR_UPSTREAM_STALL', message)],
      ['an error event, then end()', (r) => r.event({ type: 'error', message, code: 'TOLLGATE_ERR_UPSTREAM_STALL' }) + r.end()],
    ];
    for (const [how, fail] of ways) {
      const r = variant.make(codec, CLIENT_MODEL);
      const sse = head.map((e) => r.event(e)).join('') + fail(r);
      t.equal(r.end(), '', `${how}: nothing more after the terminal error`);
      const parsed = parseFrames(codec, framesOf(sse, `${format}|error|${how}`));
      t.equal(parsed.threw, null, `${how}: the parser reads it`);
      const errors = parsed.events.filter((e) => e.type === 'error');
      t.ok(errors.length > 0 || !parsed.terminated, `${how}: an error event or a non-terminated stream`);
      t.equal(errors.length > 0, profile.streamError.errorEvent, `${how}: ${profile.streamError.errorEvent ? 'an' : 'no'} error event, as documented`);
      t.equal(parsed.terminated, profile.streamError.terminated, `${how}: terminated=${profile.streamError.terminated}, as documented`);
      if (errors.length > 0) t.equal(errors[0]!.type === 'error' ? errors[0]!.message : undefined, message, `${how}: the error message reaches the parser`);
      t.notOk(parsed.events.some((e) => e.type === 'finish'), `${how}: no finish`);
      const first = streamView(parsed.events, profile.opaqueEssence).blocks[0];
      t.strictSame(first, { kind: 'text', text: 'Partial answer' }, `${how}: the text before the error is delivered`);
    }
  });

  t.test(`${format}: a stream cut short is not terminated`, async (t) => {
    for (const c of responseCases(profile)) {
      const sse = renderSse(variant.make(codec, CLIENT_MODEL), eventsOf(c.response));
      const frames = sseFrameTexts(sse);
      t.ok(frames.length >= 2, `${c.name}: ${frames.length} frames`);

      const atBoundary = parseFrames(codec, framesOf(frames.slice(0, Math.ceil(frames.length / 2)).join(''), `${format}|cut|${c.name}`));
      t.equal(atBoundary.threw, null, `${c.name}, cut between frames: the parser reads the head`);
      t.equal(atBoundary.terminated, false, `${c.name}, cut between frames: not terminated`);

      // Inside the middle frame: the parser may refuse the partial data (a TollgateError the pipeline reports).
      const mid = Math.floor(frames.length / 2);
      const cutAt = frames.slice(0, mid).join('').length + Math.floor(frames[mid]!.length / 2);
      const inside = parseFrames(codec, framesOf(sse.slice(0, cutAt), `${format}|cut-inside|${c.name}`));
      t.equal(inside.terminated, false, `${c.name}, cut inside a frame: not terminated`);
      t.ok(inside.threw === null || inside.threw instanceof TollgateError, `${c.name}, cut inside a frame: read, or refused with a TollgateError (${inside.threw?.message ?? 'read'})`);
    }
  });
}
