// Every path the Gemini SDKs send (src/pipeline/routes.ts): /v1beta and /v1, with and without `models/`, both actions,
// streamed (alt=sse) and not, countTokens; raw requests and @google/genai with its apiVersion. The wildcards must not
// take the routes that were there before them; GET and HEAD / answer with the name and version.

import t from 'tap';
import { GoogleGenAI } from '@google/genai';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { DEFAULT_TEXT, geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { buckets, rowOf } from '../helpers/clients.js';

const up = await startFakeGemini(t);
const anth = await startFakeAnthropic(t);
const gw = await startApp(t, { providers: { gem: geminiProvider(up), anth: fakeAnthropicProvider(anth.url), demo: DEMO_PROVIDER } });

const FORMS = ['/v1beta/models/gem/gemini-2.5-flash', '/v1beta/gem/gemini-2.5-flash', '/v1/models/gem/gemini-2.5-flash', '/v1/gem/gemini-2.5-flash'];
const ACTIONS = [
  { action: 'generateContent', query: '', stream: false },
  { action: 'streamGenerateContent', query: '?alt=sse', stream: true },
];
const BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

const post = (path: string, body: unknown = BODY) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

for (const form of FORMS) {
  for (const a of ACTIONS) {
    t.test(`raw POST ${form}:${a.action}${a.query}`, async (t) => {
      const res = await post(`${form}:${a.action}${a.query}`);
      t.equal(res.status, 200);
      t.match(res.headers.get('content-type'), a.stream ? /^text\/event-stream/ : /^application\/json/);
      const text = await res.text();
      t.ok(text.includes('Hello'), 'the answer');
      t.equal(up.received.at(-1)!.path, `/v1beta/models/gemini-2.5-flash:${a.action}${a.query}`, "the provider's own path");
      const row = await rowOf(gw, res.headers.get('x-request-id')!);
      t.match(row, { endpoint: 'generate_content', model: 'gem/gemini-2.5-flash', status: 'success', stream: a.stream });
      t.same(buckets(row), [18, 12, null, 8, 6]);
    });
  }
}

for (const apiVersion of ['v1beta', 'v1']) {
  t.test(`@google/genai (apiVersion ${apiVersion}): generateContent, generateContentStream, countTokens`, async (t) => {
    const genai = new GoogleGenAI({ apiKey: 'client', httpOptions: { baseUrl: gw.url, apiVersion } });
    const r = await genai.models.generateContent({ model: 'gem/gemini-2.5-flash', contents: 'hi' });
    t.equal(r.text, DEFAULT_TEXT);
    let streamed = '';
    for await (const c of await genai.models.generateContentStream({ model: 'gem/gemini-2.5-flash', contents: 'hi' })) streamed += c.text ?? '';
    t.equal(streamed, DEFAULT_TEXT);
    const n = await genai.models.countTokens({ model: 'gem/gemini-2.5-flash', contents: 'one two three' });
    t.ok((n.totalTokens ?? 0) > 0, `countTokens answered (${n.totalTokens})`);
    t.equal(up.received.at(-1)!.path, '/v1beta/models/gemini-2.5-flash:countTokens', "passed to the provider's countTokens");
  });
}

t.test('the new path forms reach the translated path too (Gemini client, Anthropic provider)', async (t) => {
  for (const path of ['/v1/anth/claude-sonnet-4-5:generateContent', '/v1beta/anth/claude-sonnet-4-5:streamGenerateContent?alt=sse']) {
    const res = await post(path);
    t.equal(res.status, 200, path);
    t.ok((await res.text()).includes('Hello'), 'the answer in Gemini shape');
  }
});

t.test('countTokens elsewhere: 400 TOLLGATE_ERR_NOT_SUPPORTED; no usage row', async (t) => {
  const before = (await gw.rows()).length;
  const res = await post('/v1beta/models/demo/echo-1:countTokens');
  t.equal(res.status, 400);
  t.match(await res.json(), { error: { code: 'TOLLGATE_ERR_NOT_SUPPORTED' } });
  const ok = await post('/v1/gem/gemini-2.5-flash:countTokens');
  t.equal(ok.status, 200);
  t.equal((await gw.rows()).length, before, 'counting leaves no row');
});

t.test('a path that names no Gemini action is a 404, without a row', async (t) => {
  const before = (await gw.rows()).length;
  for (const path of ['/v1/foo', '/v1beta/models/gem/gemini-2.5-flash:embedContent', '/v1/gem/gemini-2.5-flash', '/v1beta/models/:generateContent']) {
    const res = await post(path);
    t.equal(res.status, 404, path);
    t.match(await res.json(), { error: { code: 'TOLLGATE_ERR_NOT_FOUND' } });
  }
  t.equal((await gw.rows()).length, before);
});

t.test('the routes that were there keep their handlers', async (t) => {
  const chat = await post('/v1/chat/completions', { model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 200);
  t.equal(((await chat.json()) as { object: string }).object, 'chat.completion');
  const messages = await post('/v1/messages', { model: 'demo/echo-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(((await messages.json()) as { type: string }).type, 'message');
  const responses = await post('/v1/responses', { model: 'demo/echo-1', input: 'hi' });
  t.equal(((await responses.json()) as { object: string }).object, 'response');
  const count = await post('/v1/messages/count_tokens', { model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] });
  t.match(await count.json(), { error: { code: 'TOLLGATE_ERR_NOT_SUPPORTED', message: /count_tokens is answered by Anthropic/ } });
  const models = await fetch(`${gw.url}/v1/models`);
  t.equal(((await models.json()) as { object: string }).object, 'list');
});

t.test('GET and HEAD /: the name and version, nothing else', async (t) => {
  const res = await fetch(`${gw.url}/`);
  t.equal(res.status, 200);
  const body = (await res.json()) as Record<string, unknown>;
  t.same(Object.keys(body), ['name', 'version']);
  t.equal(body.name, 'tollgate');
  t.match(body.version, /^\d+\.\d+\.\d+/);
  const head = await fetch(`${gw.url}/`, { method: 'HEAD' });
  t.equal(head.status, 200);
});
