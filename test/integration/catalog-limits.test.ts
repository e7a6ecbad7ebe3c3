// Output limits of models the catalog lacks, end to end: an OpenAI Chat or Responses client (Codex) through the
// gateway to a fake Anthropic upstream on a real socket, under a provider named `anthropic` (so it reads the catalog).
// claude-sonnet-4-5 and claude-haiku-4-5 are not in the pinned catalog; their output limit (64,000) comes from the
// second limits source (llm-info), so a translated request with no max_tokens of its own is sent with it, not with
// the 4,096 default, and a larger one is clamped to it.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const up = await startFakeAnthropic(t);
const oa = await startFakeOpenAI(t);
// `GPT-4o` under `openai` (its catalog): the catalog's gpt-4o written another way (an Azure deployment's spelling).
const openai = fakeProvider(oa.baseUrl, { models: { 'GPT-4o': {} } });
const gw = await startApp(t, { providers: { anthropic: fakeAnthropicProvider(up.url), openai } });

async function post(path: string, body: Record<string, unknown>): Promise<number> {
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.body.text();
  return res.statusCode;
}

t.test('an OpenAI Chat request with no max_tokens reaches Anthropic with the model\'s output limit', async (t) => {
  t.equal(await post('/v1/chat/completions', { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] }), 200);
  t.equal(up.last().model, 'claude-sonnet-4-5');
  t.equal(up.last().max_tokens, 64000, 'llm-info: claude-sonnet-4-5-20250929 outputs up to 64,000 tokens');
});

t.test('a Responses request with no max_output_tokens, the same', async (t) => {
  t.equal(await post('/v1/responses', { model: 'anthropic/claude-haiku-4-5', input: 'hi' }), 200);
  t.equal(up.last().max_tokens, 64000);
});

t.test('a larger max_tokens is clamped to the limit', async (t) => {
  t.equal(await post('/v1/chat/completions', { model: 'anthropic/claude-sonnet-4-5', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }] }), 200);
  t.equal(up.last().max_tokens, 64000);
});

t.test('a model the catalog lists, written another way, is clamped to the catalog limit', async (t) => {
  // The catalog's gpt-4o outputs up to 16,384 tokens; llm-info's entry says 4,096 and was what `GPT-4o` matched.
  t.equal(await post('/v1/chat/completions', { model: 'openai/GPT-4o', max_tokens: 16000, messages: [{ role: 'user', content: 'hi' }] }), 200);
  t.equal(oa.received.at(-1)?.body.max_tokens, 16000, 'below the catalog limit: not lowered');
  t.equal(await post('/v1/chat/completions', { model: 'openai/GPT-4o', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }] }), 200);
  t.equal(oa.received.at(-1)?.body.max_tokens, 16384, 'above it: clamped to it');
});
