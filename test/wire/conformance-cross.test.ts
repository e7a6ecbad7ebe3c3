// Codec conformance, part 3: every ordered pair of codecs (A the client's format, B the provider's), on the
// whole-answer cases of B's profile (test/helpers/canonical-cases.ts, test/fixtures/conformance/<format>.ts).
//
// - Whole answers: a canonical answer rendered in B's format (B.renderResponse gives what a B upstream returns),
//   parsed by B.parseResponse, rendered for the client by A.renderResponse, parsed by A.parseResponse keeps the text,
//   the tool calls (name and parsed arguments), the stop reason and the usage TOTAL. A client of another family
//   never receives B's opaque data (canonical.ts; docs/translation.md: opaque reasoning data "is tagged with the
//   family that produced it and only sent back to that family"), except what B's profile shows to A's family on
//   purpose (`shownTo`: a Gemini call signature to a Chat client, which sends it back to Gemini).
// - Streams, the same path as the pipeline (src/pipeline/translated.ts): B's SSE -> SseParser (seeded random chunks) ->
//   B's stream parser -> A's stream renderer -> SSE -> A's stream parser: the same checks. Both sides use the
//   profile's last renderer variant that carries usage (an OpenAI upstream is always asked for it; see
//   openai/chat-build.ts).

import t from 'tap';
import type { CanonicalEvent, CanonicalResponse, Part } from '../../src/wire/canonical.js';
import {
  eventsOf, framesOf, parseFrames, registryCodecs, renderSse, responseCases, streamView, usageTotal, type AnswerView,
  type ConformanceProfile, type StreamRendererVariant,
} from '../helpers/canonical-cases.js';
import { profileOf } from '../fixtures/conformance/index.js';

const CODECS = registryCodecs();

interface Kept {
  readonly text: string;
  readonly calls: { name: string; args: unknown }[];
  readonly stopReason: string | null;
  readonly total: number;
}

const parsedArgs = (s: string): unknown => {
  try {
    return JSON.parse(s);
  } catch {
    return { unparsable: s };
  }
};

function keptOfResponse(r: CanonicalResponse): Kept {
  const parts = r.content;
  return {
    text: parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(''),
    calls: parts.flatMap((p: Part) => (p.type === 'tool_call' ? [{ name: p.name, args: parsedArgs(p.arguments) }] : [])),
    stopReason: r.stopReason,
    total: usageTotal(r.usage),
  };
}

function keptOfView(v: AnswerView): Kept {
  return {
    text: v.blocks.flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join(''),
    calls: v.blocks.flatMap((b) => (b.kind === 'tool_call' ? [{ name: b.name, args: parsedArgs(b.arguments) }] : [])),
    stopReason: v.stopReason,
    total: usageTotal(v.usage),
  };
}

const usageVariant = (p: ConformanceProfile): StreamRendererVariant => [...p.streamRenderers].reverse().find((v) => v.usage === 'carried') ?? p.streamRenderers[0]!;

for (const a of CODECS) {
  const pa = profileOf(a.format).profile;
  for (const b of CODECS) {
    const pb = profileOf(b.format).profile;
    const foreign = pa.family !== pb.family;
    /** B's opaque data a client of A's family is given on purpose (ConformanceProfile.shownTo). */
    const shown = pb.shownTo?.[pa.family] ?? [];

    t.test(`whole answers: ${a.format} client <- ${b.format} provider`, async (t) => {
      for (const c of responseCases(pb)) {
        const want = keptOfResponse(c.response);
        let clientJson: string;
        let back: CanonicalResponse;
        try {
          const upstream = b.codec.parseResponse(JSON.parse(JSON.stringify(b.codec.renderResponse(c.response, 'upstream-model'))));
          clientJson = JSON.stringify(a.codec.renderResponse(upstream, 'client-model'));
          back = a.codec.parseResponse(JSON.parse(clientJson));
        } catch (err) {
          t.fail(`${c.name}: the trip threw: ${String(err)}`);
          continue;
        }
        const got = keptOfResponse(back);
        t.equal(got.text, want.text, `${c.name}: text`);
        t.strictSame(got.calls, want.calls, `${c.name}: tool calls (name, parsed arguments)`);
        t.equal(got.stopReason, want.stopReason, `${c.name}: stop reason`);
        t.equal(got.total, want.total, `${c.name}: usage total`);
        if (foreign) {
          for (const s of pb.secrets) {
            if (!shown.includes(s)) t.notOk(clientJson.includes(s), `${c.name}: ${pb.family} opaque data (${s.slice(0, 12)}...) is not shown to a ${pa.family} client`);
            else if (JSON.stringify(c.response).includes(s)) t.ok(clientJson.includes(s), `${c.name}: ${pb.family} opaque data (${s.slice(0, 12)}...) is shown to a ${pa.family} client, which sends it back`);
          }
        }
      }
    });

    t.test(`streams: ${a.format} client <- ${b.format} provider`, async (t) => {
      const vb = usageVariant(pb);
      const va = usageVariant(pa);
      for (const c of responseCases(pb)) {
        const seed = `${a.format}<-${b.format}|${c.name}`;
        const upstream = parseFrames(b.codec, framesOf(renderSse(vb.make(b.codec, 'upstream-model'), eventsOf(c.response)), `${seed}|upstream`));
        t.ok(upstream.terminated && upstream.threw === null, `${c.name}: the ${b.format} upstream stream parses to its end`);
        const renderer = va.make(a.codec, 'client-model');
        const clientSse = upstream.events.map((e: CanonicalEvent) => renderer.event(e)).join('') + renderer.end();
        const client = parseFrames(a.codec, framesOf(clientSse, `${seed}|client`));
        t.ok(client.terminated && client.threw === null, `${c.name}: the ${a.format} client stream parses to its end`);
        const want = keptOfResponse(c.response);
        const got = keptOfView(streamView(client.events, pa.opaqueEssence));
        t.equal(got.text, want.text, `${c.name}: text`);
        t.strictSame(got.calls, want.calls, `${c.name}: tool calls (name, parsed arguments)`);
        t.equal(got.stopReason, want.stopReason, `${c.name}: stop reason`);
        if (va.usage === 'carried' && vb.usage === 'carried') t.equal(got.total, want.total, `${c.name}: usage total`);
        if (foreign) {
          for (const s of pb.secrets) {
            if (!shown.includes(s)) t.notOk(clientSse.includes(s), `${c.name}: ${pb.family} opaque data (${s.slice(0, 12)}...) is not streamed to a ${pa.family} client`);
            else if (JSON.stringify(c.response).includes(s)) t.ok(clientSse.includes(s), `${c.name}: ${pb.family} opaque data (${s.slice(0, 12)}...) is streamed to a ${pa.family} client, which sends it back`);
          }
        }
      }
    });
  }
}
