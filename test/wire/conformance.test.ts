// Codec conformance, part 1: requests and whole answers. Every codec of the registry (src/wire/registry.ts,
// through the config's `format:` enum, so a new codec is included without editing this file) runs the same
// canonical cases (test/helpers/canonical-cases.ts); what each codec may lose is data in its profile
// (test/fixtures/conformance/<format>.ts), each loss citing the codec's own comment.
//
// - Request round trip: canonical -> buildRequest(target) -> JSON body -> parseRequest (the body as a client of the
//   same format would send it) -> canonical, equal to the original after the profile's request rules.
//   buildRequest builds an UPSTREAM request; for all four formats that body is also a valid client request
//   (provider additions such as store: false, include, stream_options or a default max_tokens are either ignored by
//   parseRequest or expected by the rules). The one exception is where the model and streaming live: Gemini puts
//   them in the URL, so its parseRequest returns model '' and stream false and the URL path is checked instead
//   (profile.checkBuilt).
// - No foreign opaque data upstream: another family's signatures / encrypted reasoning never appear in a request
//   body (canonical.ts: opaque data "is only sent back to the same format family; another family drops it").
// - Response round trip: canonical -> renderResponse -> JSON -> parseResponse -> canonical, equal after the profile's
//   response rules and usage rule; the usage TOTAL is preserved by every codec.
//
// Streams: conformance-stream.test.ts. Every ordered pair of codecs: conformance-cross.test.ts.

import t from 'tap';
import {
  applyRules, applyUsageRule, configFormats, registryCodecs, requestCases, responseCases, targetFor, USAGE_FULL,
  usageTotal,
} from '../helpers/canonical-cases.js';
import { profileOf } from '../fixtures/conformance/index.js';
import type { WireCodec } from '../../src/wire/codec.js';
import { codecFor } from '../../src/wire/registry.js';
import type { CanonicalResponse } from '../../src/wire/canonical.js';
import { wireJson, wireText } from '../helpers/wire.js';

const CODECS = registryCodecs();
const CLIENT_MODEL = 'client-model';

t.test('the suite covers every codec of the registry', async (t) => {
  const formats = configFormats();
  t.ok(formats.length >= 4, `config formats: ${formats.join(', ')}`);
  for (const f of formats) {
    const c = codecFor(f) as WireCodec | undefined;
    t.ok(c !== undefined && typeof c.format === 'string' && typeof c.parseRequest === 'function', `config format ${f} resolves to a codec in the registry`);
  }
  for (const c of CODECS) {
    t.ok(profileOf(c.format).own, `${c.format} has a conformance profile (test/fixtures/conformance/${c.format}.ts); without one it is held to strictProfile()`);
    t.ok(c.formats.includes(c.codec.format as (typeof c.formats)[number]), `${c.format}: codec.format is one of the formats resolving to it (${c.formats.join(', ')})`);
  }
  const undocumented = CODECS.flatMap((c) => [...profileOf(c.format).profile.request, ...profileOf(c.format).profile.response].filter((r) => !r.documented).map((r) => `${c.format}: ${r.what} [${r.cite}]`));
  t.comment(`losses the formats force but the codecs do not document:\n  ${undocumented.join('\n  ')}`);
});

for (const { format, codec, formats } of CODECS) {
  const { profile } = profileOf(format);

  t.test(`${format}: request round trip (canonical -> buildRequest -> parseRequest)`, async (t) => {
    t.comment(`client request: ${profile.clientRequest}`);
    for (const r of profile.request) t.comment(`drops: ${r.what} [${r.cite}]${r.documented ? '' : ' (undocumented)'}`);
    for (const c of requestCases(profile)) {
      const target = targetFor(profile, formats[0]!, c.model);
      t.equal(target.modelId, c.request.model, `${c.name}: the target model is the request's model`);
      const up = codec.buildRequest(c.request, target);
      let body: unknown;
      try {
        body = wireJson(up.body);
      } catch (err) {
        t.fail(`${c.name}: the built body is not JSON: ${String(err)}`);
        continue;
      }
      let back;
      try {
        back = codec.parseRequest(body);
      } catch (err) {
        t.fail(`${c.name}: parseRequest refused the body buildRequest made: ${String(err)}`);
        continue;
      }
      const expected = applyRules(profile.request, c.request);
      t.strictSame(back, expected, `${c.name}: round trip equals the original modulo the ${profile.request.length} request rules of the ${format} profile`);
      if (profile.checkBuilt) t.strictSame(profile.checkBuilt(c.request, up.path), [], `${c.name}: the built URL carries what the body does not`);
    }
  });

  t.test(`${format}: another family's opaque data is never sent upstream`, async (t) => {
    const target = targetFor(profile, formats[0]!, 'reasoning');
    for (const other of CODECS) {
      const foreign = profileOf(other.format).profile;
      if (foreign.family === profile.family || foreign.secrets.length === 0) continue;
      const c = requestCases(foreign).find((x) => x.model === 'reasoning')!;
      const body = codec.buildRequest({ ...c.request, model: target.modelId }, target).body;
      for (const secret of foreign.secrets) {
        t.notOk(wireText(body).includes(secret), `${foreign.family} opaque data (${secret.slice(0, 12)}...) is not sent to a ${format} upstream`);
      }
    }
  });

  t.test(`${format}: response round trip (canonical -> renderResponse -> parseResponse)`, async (t) => {
    for (const r of profile.response) t.comment(`drops: ${r.what} [${r.cite}]${r.documented ? '' : ' (undocumented)'}`);
    t.strictSame(applyUsageRule(profile.usage, USAGE_FULL), profile.usageFullRoundTrip, `the usage rule gives the documented round trip of all five buckets [${profile.usage.cite}]`);
    for (const c of responseCases(profile)) {
      let back: CanonicalResponse;
      try {
        back = codec.parseResponse(JSON.parse(JSON.stringify(codec.renderResponse(c.response, CLIENT_MODEL))));
      } catch (err) {
        t.fail(`${c.name}: parseResponse refused what renderResponse made: ${String(err)}`);
        continue;
      }
      const id = c.response.id.startsWith(profile.responseId.prefix) ? c.response.id : profile.responseId.prefix + c.response.id;
      const expected: CanonicalResponse = {
        ...applyRules(profile.response, c.response),
        id,
        model: CLIENT_MODEL,
        usage: applyUsageRule(profile.usage, c.response.usage),
      };
      t.strictSame(back, expected, `${c.name}: round trip equals the original modulo the ${profile.response.length} response rules and the usage rule of the ${format} profile`);
      t.equal(usageTotal(back.usage), usageTotal(c.response.usage), `${c.name}: the usage total is preserved`);
      if (c.response.usage === USAGE_FULL) t.strictSame(back.usage, profile.usageFullRoundTrip, `${c.name}: all five buckets come back as documented`);
    }
  });
}
