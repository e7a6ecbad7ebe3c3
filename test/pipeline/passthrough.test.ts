// Same-format passthrough (src/pipeline/passthrough.ts, docs/translation.md): the official SDKs against the fake
// upstreams, through a recording relay (helpers/tee.ts). Asserted: what the upstream RECEIVED (the client's body with
// only the model rewritten: cache_control everywhere, context_management, output_config, prompt_cache_key, include,
// built-in and custom tools, cachedContent, safetySettings, unknown fields), the client's protocol headers minus its
// credentials, config headers winning; that the client received the upstream's bytes unchanged, whole and streamed;
// and that the row's tokens are the fake's usage.

import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { buckets, rowOf } from '../helpers/clients.js';
import { FAKE_ANTHROPIC_KEY, fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { respProvider, startFakeResponses, UPSTREAM_KEY } from '../helpers/fake-responses.js';
import { startTee, type Tee } from '../helpers/tee.js';

const anthUp = await startFakeAnthropic(t);
const respUp = await startFakeResponses(t);
const gemUp = await startFakeGemini(t);
const teeA = await startTee(t, anthUp.url);
const teeR = await startTee(t, respUp.baseUrl);
const teeG = await startTee(t, gemUp.baseUrl);

const gw = await startApp(t, {
  providers: {
    anth: fakeAnthropicProvider(teeA.origin),
    anthcfg: fakeAnthropicProvider(teeA.origin, {
      headers: { 'anthropic-beta': 'from-config' },
      models: { 'claude-haiku-4-5': { kind: 'llm', capabilities: ['tools'], max_output_tokens: 256 } },
    }),
    resp: respProvider(`${teeR.origin}/v1`),
    gem: geminiProvider({ baseUrl: `${teeG.origin}/v1beta`, key: gemUp.key }),
    demo: DEMO_PROVIDER,
  },
});

/** The client's bytes equal the upstream's for the last exchange through `tee`. */
async function sameBytes(t: Test, tee: Tee, received: string): Promise<void> {
  const sent = (await tee.exchanges.at(-1)!.answer).toString('utf8');
  t.ok(sent.length > 0, 'the upstream answered');
  t.equal(received, sent, 'the client received the upstream bytes unchanged');
}

// ---- Anthropic -----------------------------------------------------------------------------------------------

const ANTHROPIC_BODY = {
  model: 'anth/claude-sonnet-4-5',
  max_tokens: 1000,
  system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'What is the weather?', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Which city?' }] },
    { role: 'user', content: [{ type: 'text', text: 'Paris', cache_control: { type: 'ephemeral' } }] },
  ],
  tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, cache_control: { type: 'ephemeral' } }],
  context_management: { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: 30000 } }] },
  output_config: { effort: 'high' },
  x_future_field: { nested: [1, 'two', null] },
};

const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'client-key-not-for-upstream', maxRetries: 0, defaultHeaders: { 'anthropic-beta': 'context-management-2025-06-27' } });

for (const stream of [false, true]) {
  t.test(`Anthropic SDK -> Anthropic provider, ${stream ? 'streamed' : 'whole'}: the body as sent, the bytes as answered`, async (t) => {
    const params = { ...ANTHROPIC_BODY, ...(stream ? { stream: true } : {}) } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const res = await anthropic.messages.create(params).asResponse();
    t.equal(res.status, 200);
    const text = await res.text();
    await sameBytes(t, teeA, text);
    const got = anthUp.received.at(-1)!;
    t.same(got.body, { ...ANTHROPIC_BODY, model: 'claude-sonnet-4-5', ...(stream ? { stream: true } : {}) }, 'every field as the client sent it, the model id rewritten');
    t.equal(got.headers['anthropic-beta'], 'context-management-2025-06-27', 'anthropic-beta forwarded');
    t.ok(got.headers['anthropic-version'], 'anthropic-version forwarded');
    t.ok(got.headers['x-stainless-lang'], "the SDK's x-stainless-* headers forwarded");
    t.equal(got.headers['x-api-key'], FAKE_ANTHROPIC_KEY, "the provider's key, not the client's");
    t.equal(res.headers.get('x-tollgate-requested-model'), 'anth/claude-sonnet-4-5');
    const row = await rowOf(gw, res.headers.get('x-request-id')!);
    t.match(row, { endpoint: 'messages', provider: 'anth', model: 'anth/claude-sonnet-4-5', status: 'success', stream, usage_source: 'reported' });
    t.same(buckets(row), [20, 5, 7, 9, null], "the row's tokens are the fake's usage");
    if (stream) t.ok(Number(row.ttft_ms) > 0, 'time to first token read from the stream');
  });
}

t.test('Anthropic: credentials and hop-by-hop headers stay behind; config headers win', async (t) => {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', 'x-api-key': 'client', authorization: 'Bearer client', cookie: 'session=1', 'x-goog-api-key': 'client',
      'anthropic-beta': 'from-client', 'anthropic-version': '2023-06-01', 'openai-organization': 'org-client', 'x-other': 'no',
    },
    body: JSON.stringify({ model: 'anthcfg/claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200);
  await sameBytes(t, teeA, await res.text());
  const h = anthUp.received.at(-1)!.headers;
  t.equal(h['anthropic-beta'], 'from-config', "the provider config's header wins over the client's");
  t.equal(h['anthropic-version'], '2023-06-01', "the client's anthropic-version");
  t.equal(h['x-api-key'], FAKE_ANTHROPIC_KEY);
  for (const k of ['authorization', 'cookie', 'x-goog-api-key', 'openai-organization', 'x-other']) t.notOk(k in h, `${k} not forwarded`);
});

t.test('Anthropic: the suffix, the max_tokens clamp and capability stripping are the only rewrites', async (t) => {
  await anthropic.messages.create({
    model: 'anth/claude-haiku-4-5(high)', max_tokens: 500, messages: [{ role: 'user', content: 'hi' }],
    thinking: { type: 'enabled', budget_tokens: 2000 }, cache_control: { type: 'ephemeral' },
  } as unknown as Anthropic.MessageCreateParamsNonStreaming);
  const body = anthUp.received.at(-1)!.body;
  t.equal(body.model, 'claude-haiku-4-5', 'suffix removed');
  t.notOk('thinking' in body, 'a model without the reasoning capability gets no thinking');
  t.same(body.cache_control, { type: 'ephemeral' }, 'an unknown top-level field still passes');

  const thinking = { ...ANTHROPIC_BODY, model: 'anth/claude-sonnet-4-5(low)', max_tokens: 4000, temperature: 0.5, top_k: 3 };
  await anthropic.messages.create(thinking as unknown as Anthropic.MessageCreateParamsNonStreaming);
  const b2 = anthUp.received.at(-1)!.body;
  t.same(b2.thinking, { type: 'enabled', budget_tokens: 1024 }, 'the suffix on the format’s own parameter');
  t.notOk('temperature' in b2 || 'top_k' in b2, 'sampling parameters thinking forbids are removed');
  t.same(b2.tools, ANTHROPIC_BODY.tools, 'the rest untouched');

  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  await anthropic.messages.create({
    model: 'anthcfg/claude-haiku-4-5', max_tokens: 5000,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?', cache_control: { type: 'ephemeral' } }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }],
  });
  const b3 = anthUp.received.at(-1)!.body;
  t.equal(b3.max_tokens, 256, "max_tokens clamped to the model's max_output_tokens");
  t.same(b3.messages, [{ role: 'user', content: [{ type: 'text', text: 'what is this?', cache_control: { type: 'ephemeral' } }] }], 'the image removed (no vision), the rest as sent');
});

// ---- Responses -----------------------------------------------------------------------------------------------

const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key-not-for-upstream', maxRetries: 0, defaultHeaders: { 'openai-beta': 'responses=v1' } });
const RESPONSES_BODY = {
  model: 'resp/o4-mini',
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
  instructions: 'Be brief.',
  prompt_cache_key: 'codex-session-42',
  include: ['reasoning.encrypted_content'],
  store: false,
  reasoning: { effort: 'low', summary: 'auto' },
  tools: [
    { type: 'web_search' },
    { type: 'custom', name: 'spawn_agent', description: 'Run a sub-agent' },
    { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false },
  ],
};

for (const stream of [false, true]) {
  t.test(`openai SDK responses -> Responses provider, ${stream ? 'streamed' : 'whole'}: prompt_cache_key, include and every tool reach the upstream`, async (t) => {
    const params = { ...RESPONSES_BODY, ...(stream ? { stream: true } : {}) } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const res = await openai.responses.create(params).asResponse();
    t.equal(res.status, 200);
    await sameBytes(t, teeR, await res.text());
    const got = respUp.received.at(-1)!;
    t.same(got.body, { ...RESPONSES_BODY, model: 'o4-mini', ...(stream ? { stream: true } : {}) }, 'every field as the client sent it, the model id rewritten');
    t.equal(got.headers['openai-beta'], 'responses=v1', 'openai-beta forwarded');
    t.equal(got.headers.authorization, `Bearer ${UPSTREAM_KEY}`, "the provider's key");
    const row = await rowOf(gw, res.headers.get('x-request-id')!);
    t.match(row, { endpoint: 'responses', provider: 'resp', status: 'success', stream });
    t.same(buckets(row), [24, 16, null, 15, 10], "the row's tokens are the fake's usage");
  });
}

t.test('Responses: an unknown field reaches the upstream, and its refusal reaches the client as it came', async (t) => {
  const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'resp/gpt-4.1', input: 'hi', x_future: 1 }) });
  t.equal(res.status, 400);
  t.match(await res.json(), { error: { param: 'x_future' } }, "the upstream's own error body");
  t.equal(respUp.received.at(-1)!.body.x_future, 1, 'the upstream received the unknown field');
});

// ---- Gemini --------------------------------------------------------------------------------------------------

const GEMINI_BODY = {
  contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
  cachedContent: 'cachedContents/abc123',
  safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
  generationConfig: { temperature: 0.3, maxOutputTokens: 800 },
};

for (const stream of [false, true]) {
  t.test(`Gemini -> Gemini provider, ${stream ? 'streamed' : 'whole'}: cachedContent and safetySettings reach the upstream, the bytes come back`, async (t) => {
    const action = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    const res = await fetch(`${gw.url}/v1beta/models/gem/gemini-2.5-flash:${action}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client', 'x-goog-api-client': 'genai-js/test' }, body: JSON.stringify(GEMINI_BODY) });
    t.equal(res.status, 200);
    await sameBytes(t, teeG, await res.text());
    const got = gemUp.received.at(-1)!;
    t.equal(got.path, `/v1beta/models/gemini-2.5-flash:${action}`);
    t.same(got.body, GEMINI_BODY, 'the body exactly as sent');
    t.equal(got.headers['x-goog-api-key'], gemUp.key, "the provider's key, not the client's");
    t.equal(got.headers['x-goog-api-client'], 'genai-js/test', 'x-goog-* forwarded');
    const row = await rowOf(gw, res.headers.get('x-request-id')!);
    t.match(row, { endpoint: 'generate_content', provider: 'gem', status: 'success', stream });
    t.same(buckets(row), [18, 12, null, 8, 6], "the row's tokens are the fake's usage");
  });
}

t.test('Gemini: an unknown field reaches the upstream (which refuses it, as Gemini does)', async (t) => {
  const res = await fetch(`${gw.url}/v1beta/models/gem/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...GEMINI_BODY, futureField: true }) });
  t.equal(res.status, 400);
  t.equal(gemUp.received.at(-1)!.body.futureField, true);
});

t.test('@google/genai: cachedContent and safetySettings from the SDK config', async (t) => {
  const genai = new GoogleGenAI({ apiKey: 'client', httpOptions: { baseUrl: gw.url } });
  const r = await genai.models.generateContent({
    model: 'gem/gemini-2.5-flash', contents: 'hi',
    config: { cachedContent: 'cachedContents/xyz', safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT' as never, threshold: 'BLOCK_NONE' as never }] },
  });
  t.ok(r.text, 'an answer');
  const body = gemUp.received.at(-1)!.body;
  t.equal(body.cachedContent, 'cachedContents/xyz');
  t.same(body.safetySettings, [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }]);
});

t.test('cross-format still goes through the canonical model', async (t) => {
  const r = await anthropic.messages.create({ model: 'resp/gpt-4.1', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(r.type, 'message', 'an Anthropic answer from a Responses provider');
  t.equal(respUp.received.at(-1)!.body.store, false, 'built by the Responses codec');
});
