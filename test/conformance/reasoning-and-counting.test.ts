// Conformance, opaque reasoning and token counting. Opaque reasoning data (Anthropic thinking signatures, Responses
// encrypted reasoning, Gemini thought signatures) only goes back to the family that produced it: a history carrying
// each family's data is sent to every provider, and the provider sees only its own family's; a provider's answer
// with opaque data reaches a client of another family without it. Token counting: the Anthropic and Gemini
// counters reach their own format's provider (prefix removed, the provider's key, no usage row); every other target
// gets 400 TOLLGATE_ERR_NOT_SUPPORTED, not an estimate.

import t from 'tap';
import { CLIENTS, messages, post, responses, gemini, send, type ClientFormat } from './clients.js';
import type { ProviderUnderTest } from './providers.js';
import { answered, eachProvider, receivedAfter, startSuite } from './suite.js';

const suite = await startSuite(t);
const { gw } = suite;

const SIG_ANTHROPIC = 'EqQBconformanceAnthropicSignature0123456789==';
const SIG_RESPONSES = 'gAAAAABconformanceEncryptedReasoning0123456789';
// One of the two placeholders Gemini documents as accepted (the fake checks the signatures it is sent).
const SIG_GEMINI = 'context_engineering_is_the_way_to_go';

/** A second turn after an answer that carried the family's opaque reasoning, in each client format that has one. */
const HISTORIES: { client: ClientFormat; family: ProviderUnderTest['family']; signature: string; history: unknown }[] = [
  {
    client: messages, family: 'anthropic', signature: SIG_ANTHROPIC,
    history: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'They greet me.', signature: SIG_ANTHROPIC }, { type: 'text', text: 'Hello' }] },
      { role: 'user', content: 'again' },
    ],
  },
  {
    client: responses, family: 'openai-responses', signature: SIG_RESPONSES,
    history: [
      { role: 'user', content: 'hi' },
      { type: 'reasoning', id: 'rs_conformance', summary: [{ type: 'summary_text', text: 'They greet me.' }], encrypted_content: SIG_RESPONSES },
      { role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }] },
      { role: 'user', content: 'again' },
    ],
  },
  {
    client: gemini, family: 'gemini', signature: SIG_GEMINI,
    history: [
      { role: 'user', parts: [{ text: 'hi' }] },
      { role: 'model', parts: [{ text: 'They greet me.', thought: true, thoughtSignature: SIG_GEMINI }, { text: 'Hello' }] },
      { role: 'user', parts: [{ text: 'again' }] },
    ],
  },
];

eachProvider(t, suite, 'opaque-reasoning', async (t, p, up) => {
  for (const h of HISTORIES) {
    up.script({ kind: 'text' });
    const before = up.received.length;
    const r = await send(gw.url, h.client, { model: `${p.id}/${p.models.main}`, stream: false, history: h.history });
    answered(t, r);
    const sent = JSON.stringify((await receivedAfter(up, before)).body);
    if (p.family === h.family) t.ok(sent.includes(h.signature), `${h.client.name} history: ${h.family}'s own data goes back to it`);
    else t.notOk(sent.includes(h.signature), `${h.client.name} history: ${h.family}'s data never reaches ${p.format}`);
  }
  // The other direction: this provider's opaque data never reaches a client of another family.
  if (p.opaqueMark === null) return;
  for (const c of CLIENTS) {
    const sameFamily = (c.name === 'messages' && p.family === 'anthropic') || (c.name === 'responses' && p.family === 'openai-responses') || (c.name === 'gemini' && p.family === 'gemini');
    if (sameFamily) continue;
    up.script({ kind: 'thinking' });
    const r = await send(gw.url, c, { model: `${p.id}/${p.models.main}`, stream: false });
    answered(t, r);
    t.notOk(r.text.includes(p.opaqueMark), `${c.name} client: none of ${p.format}'s opaque reasoning`);
  }
});

eachProvider(t, suite, 'count-tokens', async (t, p, up) => {
  const rowsBefore = (await gw.rows()).length;
  const viaAnthropic = await post(gw.url, '/v1/messages/count_tokens', { model: `${p.id}/${p.models.main}`, messages: [{ role: 'user', content: 'How many tokens is this?' }] });
  const viaGemini = await post(gw.url, `/v1beta/models/${p.id}/${p.models.main}:countTokens`, { contents: [{ role: 'user', parts: [{ text: 'How many tokens is this?' }] }] });
  const own = p.countTokens === 'anthropic' ? viaAnthropic : p.countTokens === 'gemini' ? viaGemini : null;
  for (const [route, r] of [['anthropic', viaAnthropic], ['gemini', viaGemini]] as const) {
    if (r === own) continue;
    t.equal(r.status, 400, `${route} counter: 400 for a ${p.format} target`);
    t.match(r.text, /TOLLGATE_ERR_NOT_SUPPORTED/, `${route} counter: TOLLGATE_ERR_NOT_SUPPORTED, not a guess`);
  }
  if (own !== null) {
    answered(t, own);
    const got = up.received.at(-1)!;
    t.match(got.path, p.countTokens === 'anthropic' ? /^\/v1\/messages\/count_tokens$/ : new RegExp(`/models/${p.models.main}:countTokens$`), 'the provider\'s own counter');
    t.equal(p.keyOf(got.headers), p.key, 'with the provider key');
    t.notOk(JSON.stringify(got.body).includes(`${p.id}/`), 'prefix removed');
    const body = JSON.parse(own.text) as { input_tokens?: number; totalTokens?: number };
    t.ok(Number(body.input_tokens ?? body.totalTokens) > 0, 'the provider\'s count');
  }
  await gw.flush();
  t.equal((await gw.rows()).length, rowsBefore, 'counting leaves no usage row');
});
