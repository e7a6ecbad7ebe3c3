// The data plane's edges on real sockets: auth, the one error shape for everything the gateway refuses, routing
// by prefix, timeouts and broken upstreams. Each case checks the response and the row it leaves behind.

import t from 'tap';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { DEMO_PROVIDER } from '../helpers/app.js';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { DEFAULT_WORDS, fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { metricValue } from '../helpers/prom.js';
import { waitFor } from '../helpers/wait.js';

const up = await startFakeOpenAI(t);
// A port with nothing listening, for connection-refused.
const dead = 'http://127.0.0.1:9/v1';
// A TCP server that accepts and never answers: a TLS handshake to it never completes, so connecting times out.
const silent = createServer(() => undefined);
await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
const silentSockets = new Set<Socket>();
silent.on('connection', (s) => silentSockets.add(s));
t.teardown(() => new Promise<void>((r) => {
  for (const s of silentSockets) s.destroy();
  silent.close(() => r());
}));
const silentUrl = `https://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
const gw = await startApp(
  t,
  {
    server: { api_keys: [{ name: 'team-a', key: 'tg-key-a' }, { name: 'team-b', key: 'tg-key-b' }] },
    providers: {
      fake: fakeProvider(up.baseUrl),
      open: fakeProvider(up.baseUrl, { allow_unlisted_models: true, models: {} }),
      down: fakeProvider(dead),
      slowconnect: fakeProvider(silentUrl, { timeouts: { connect_s: 0.5, stall_s: 1 } }),
      demo: DEMO_PROVIDER,
    },
  },
  { env: { TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE: '64k' } },
);

const AUTH = { authorization: 'Bearer tg-key-a', 'content-type': 'application/json' };
const chat = (body: unknown, headers: Record<string, string> = AUTH) =>
  request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
const msg = [{ role: 'user', content: 'hi' }];

async function errorOf(res: Awaited<ReturnType<typeof request>>) {
  const body = (await res.body.json()) as { error: { code: string; message: string; type: string; request_id: string | null } };
  return { status: res.statusCode, ...body.error };
}

t.test('auth: missing and wrong keys are 401 in the error shape; a good key is recorded by name', async (t) => {
  const missing = await errorOf(await chat({ model: 'demo/echo-1', messages: msg }, { 'content-type': 'application/json' }));
  t.match(missing, { status: 401, code: 'TOLLGATE_ERR_UNAUTHORIZED', type: 'authentication_error' });
  const wrong = await errorOf(await chat({ model: 'demo/echo-1', messages: msg }, { ...AUTH, authorization: 'Bearer nope' }));
  t.match(wrong, { status: 401, code: 'TOLLGATE_ERR_UNAUTHORIZED' });
  const usage = await request(`${gw.url}/api/usage`);
  t.equal(usage.statusCode, 401, '/api/* needs a key too');
  await usage.body.dump();
  const models = await request(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer tg-key-b' } });
  t.equal(models.statusCode, 200);
  await models.body.dump();

  // Each SDK's own way of sending the key, all checked against the same keys.
  for (const [how, headers, query] of [
    ['x-api-key (Anthropic)', { 'x-api-key': 'tg-key-a' }, ''],
    ['x-goog-api-key (Gemini)', { 'x-goog-api-key': 'tg-key-a' }, ''],
    ['?key= (Gemini)', {}, '?key=tg-key-a'],
  ] as const) {
    const r = await request(`${gw.url}/v1/models${query}`, { headers });
    t.equal(r.statusCode, 200, how);
    await r.body.dump();
  }
  const wrongQuery = await request(`${gw.url}/v1/models?key=nope`);
  t.equal(wrongQuery.statusCode, 401, 'a wrong ?key= is refused');
  await wrongQuery.body.dump();

  const ok = await chat({ model: 'demo/echo-1', messages: msg }, { ...AUTH, authorization: 'Bearer tg-key-b' });
  t.equal(ok.statusCode, 200);
  const id = ok.headers['x-request-id'];
  await ok.body.dump();
  const [row] = await gw.rows(`toString(request_id) = '${String(id)}'`);
  t.equal(row?.api_key_name, 'team-b', 'the key name, never the key, is recorded');
  const all = JSON.stringify(await gw.rows()) + (await gw.metrics());
  t.notOk(all.includes('tg-key-'), 'no gateway key in rows or metrics');
  t.notOk(all.includes('sk-upstream-secret'), 'no upstream key in rows or metrics');
});

t.test('malformed JSON, wrong content type and oversize bodies are clear 4xx, recorded as failures', async (t) => {
  const bad = await errorOf(await chat('{"model": "demo/echo-1", "messages": ['));
  t.match(bad, { status: 400, code: 'TOLLGATE_ERR_INVALID_JSON', type: 'invalid_request_error' });
  t.ok(bad.request_id, 'the refused request has an id');
  const [row] = await gw.rows(`toString(request_id) = '${bad.request_id}'`);
  t.match(row, { status: 'failure', http_status: 400, error_type: 'TOLLGATE_ERR_INVALID_JSON', model: '_other' });

  const text = await errorOf(await chat('hello', { ...AUTH, 'content-type': 'text/plain' }));
  t.match(text, { status: 415, code: 'TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE' });

  const big = await errorOf(await chat({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] }));
  t.match(big, { status: 413, code: 'TOLLGATE_ERR_BODY_TOO_LARGE' });

  const noModel = await errorOf(await chat({ messages: msg }));
  t.match(noModel, { status: 400, code: 'TOLLGATE_ERR_INVALID_REQUEST' });
  const noMessages = await errorOf(await chat({ model: 'demo/echo-1' }));
  t.match(noMessages, { status: 400, code: 'TOLLGATE_ERR_INVALID_REQUEST' });
  const badStream = await errorOf(await chat({ model: 'demo/echo-1', messages: msg, stream: 'yes' }));
  t.match(badStream, { status: 400, code: 'TOLLGATE_ERR_INVALID_REQUEST' });
  const arr = await errorOf(await chat('[1,2]'));
  t.match(arr, { status: 400, code: 'TOLLGATE_ERR_INVALID_REQUEST' });
});

t.test('routing: unknown model and unknown provider are 404; unlisted models only where allowed; slashes in ids', async (t) => {
  const unknownProvider = await errorOf(await chat({ model: 'nope/gpt-4o', messages: msg }));
  t.match(unknownProvider, { status: 404, code: 'TOLLGATE_ERR_MODEL_NOT_FOUND' });
  const bare = await errorOf(await chat({ model: 'gpt-4o', messages: msg }));
  t.match(bare, { status: 404, code: 'TOLLGATE_ERR_MODEL_NOT_FOUND' });
  const unlisted = await errorOf(await chat({ model: 'fake/gpt-5', messages: msg }));
  t.match(unlisted, { status: 404, code: 'TOLLGATE_ERR_MODEL_NOT_FOUND' });

  const before = up.received.length;
  const slashes = await chat({ model: 'fake/org/model-with/slashes', messages: msg });
  t.equal(slashes.statusCode, 200);
  await slashes.body.dump();
  t.equal(up.received[before]?.body.model, 'org/model-with/slashes', 'split on the first / only');

  const passthrough = await chat({ model: 'open/anything-goes', messages: msg });
  t.equal(passthrough.statusCode, 200);
  await passthrough.body.dump();
  const m = await gw.metrics();
  t.ok(metricValue(m, 'tollgate_requests_total', { provider: 'open', model: '_other', status: 'success' }) >= 1, 'unlisted model labelled _other');
  const [row] = await gw.rows(`model = 'open/anything-goes'`);
  t.ok(row, 'the row keeps the real model name');
});

t.test('GET /v1/models lists every configured model in the OpenAI list shape', async (t) => {
  const res = await request(`${gw.url}/v1/models`, { headers: AUTH });
  const body = (await res.body.json()) as { object: string; data: { id: string; object: string; owned_by: string }[] };
  t.equal(body.object, 'list');
  t.same(body.data.map((m) => m.id).sort(), [
    'demo/echo-1', 'down/gpt-4o', 'down/org/model-with/slashes', 'fake/gpt-4o', 'fake/org/model-with/slashes',
    'slowconnect/gpt-4o', 'slowconnect/org/model-with/slashes',
  ]);
  t.ok(body.data.every((m) => m.object === 'model'));
});

t.test('upstream down: 502 in the error shape, recorded', async (t) => {
  const e = await errorOf(await chat({ model: 'down/gpt-4o', messages: msg }));
  t.match(e, { status: 502, code: 'TOLLGATE_ERR_UPSTREAM_CONNECT', type: 'upstream_error' });
  const [row] = await gw.rows(`model = 'down/gpt-4o'`);
  t.match(row, { status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_CONNECT' });
});

t.test('upstream answers 200 with a body that is not JSON: 502, not a crash', async (t) => {
  up.next({ kind: 'not-json' });
  const e = await errorOf(await chat({ model: 'fake/gpt-4o', messages: msg }));
  t.match(e, { status: 502, code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
});

t.test('stall timeout mid-stream ends the stream with a clear error event', async (t) => {
  up.next({ kind: 'stall', chunks: 2 });
  const started = Date.now();
  const res = await chat({ model: 'fake/gpt-4o', messages: msg, stream: true });
  t.equal(res.statusCode, 200);
  const text = await res.body.text();
  const elapsed = Date.now() - started;
  t.ok(elapsed >= 900 && elapsed < 5000, `ended by the 1 s stall timeout (${elapsed} ms)`);
  const frames = text.trim().split('\n\n');
  const last = JSON.parse(frames.at(-1)!.replace(/^data: /, '')) as { error: { code: string } };
  t.equal(last.error.code, 'TOLLGATE_ERR_UPSTREAM_STALL', 'last event is the error');
  t.equal(frames.filter((f) => f.includes('"content"')).length, 3, 'role chunk and the two content chunks came first');
  // The row follows the estimate, which may first load the tokenizer: wait for it rather than race it.
  await waitFor(async () => (await gw.rows(`error_type = 'TOLLGATE_ERR_UPSTREAM_STALL'`)).length > 0, 10_000);
  const [row] = await gw.rows(`error_type = 'TOLLGATE_ERR_UPSTREAM_STALL'`);
  t.match(row, { status: 'failure', usage_source: 'estimated', stream: true });
  t.equal(Number(row!.output_tokens), countTokens(DEFAULT_WORDS.slice(0, 2).join('')), 'output estimated from the two words streamed');
  t.equal(Number(row!.input_tokens), 3 + countTokens('user') + countTokens('hi') + 3, 'input estimated from the request');
});

t.test('upstream closes the stream before finishing: error event, failure row', async (t) => {
  up.next({ kind: 'cut', chunks: 2 });
  const res = await chat({ model: 'fake/gpt-4o', messages: msg, stream: true });
  const text = await res.body.text();
  t.match(text, /TOLLGATE_ERR_UPSTREAM_(PROTOCOL|CONNECT)/);
  t.notMatch(text, /\[DONE\]/, 'no [DONE] after a failure');
});

t.test('a body without stream is not streamed', async (t) => {
  const res = await chat({ model: 'fake/gpt-4o', messages: msg });
  t.match(String(res.headers['content-type']), /^application\/json/);
  const body = (await res.body.json()) as { object: string };
  t.equal(body.object, 'chat.completion');
});

t.test('unknown routes get the error shape', async (t) => {
  const e = await errorOf(await request(`${gw.url}/v1/nothing-here`, { headers: AUTH }));
  t.match(e, { status: 404, code: 'TOLLGATE_ERR_NOT_FOUND' });
});

t.test('connect timeout: a streamed request gets a 504 before any byte, recorded', async (t) => {
  const started = Date.now();
  const e = await errorOf(await chat({ model: 'slowconnect/gpt-4o', messages: msg, stream: true }));
  const elapsed = Date.now() - started;
  t.match(e, { status: 504, code: 'TOLLGATE_ERR_UPSTREAM_TIMEOUT' });
  t.ok(elapsed >= 400 && elapsed < 4000, `ended by the 0.5 s connect timeout (${elapsed} ms)`);
  const [row] = await gw.rows(`model = 'slowconnect/gpt-4o'`);
  t.match(row, { status: 'failure', http_status: 504, error_type: 'TOLLGATE_ERR_UPSTREAM_TIMEOUT', stream: true });
});

t.test('client abort before a non-streamed answer: upstream call aborted, 499 aborted row, nothing crashes', async (t) => {
  up.next({ kind: 'ok', delayMs: 400 });
  const ac = new AbortController();
  const pending = request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: AUTH, body: JSON.stringify({ model: 'fake/gpt-4o', messages: msg }), signal: ac.signal,
  });
  setTimeout(() => ac.abort(), 100);
  await t.rejects(pending);
  await waitFor(async () => (await gw.rows(`status = 'aborted' AND stream = false`)).length === 1);
  const [row] = await gw.rows(`status = 'aborted' AND stream = false`);
  t.match(row, { http_status: 499, error_type: 'client_closed', usage_source: 'none' });
  await waitFor(() => up.aborted >= 1);
  const health = await request(`${gw.url}/health`);
  t.equal(health.statusCode, 200, 'the gateway still serves');
  await health.body.dump();
});

t.test('a stream that finishes but whose provider sent no usage: estimated, never zero', async (t) => {
  up.next({ kind: 'ok', omitUsage: true });
  const res = await chat({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'no usage please' }], stream: true });
  const text = await res.body.text();
  t.match(text, /data: \[DONE\]\n\n$/);
  const id = String(res.headers['x-request-id']);
  const [row] = await gw.rows(`toString(request_id) = '${id}'`);
  const input = 3 + countTokens('user') + countTokens('no usage please') + 3;
  const output = countTokens(DEFAULT_WORDS.join(''));
  t.match(row, { status: 'success', usage_source: 'estimated', total_tokens: input + output });
  t.same([row!.input_tokens, row!.cached_tokens, row!.cache_write_tokens, row!.output_tokens, row!.reasoning_tokens], [input, null, null, output, null]);
  t.equal(Number(row!.cost), (input * 2.5 + output * 10) / 1e6, 'priced at fakeProvider prices');
});
