// The endpoints beside the main calls (a review of them):
// - the token counters refuse what the message paths refuse (docs/errors.md): a 2xx whose body is not JSON (a proxy's
//   login page), a 2xx that is an error and no count, a redirect, a status past 599: each a 502
//   UPSTREAM_PROTOCOL. Before, the first two were relayed as `application/json` (an SDK threw a SyntaxError), a 302
//   was relayed, and 799 became a 502 UPSTREAM_CONNECT logged at error level (fastify refusing the status);
// - a failed Gemini countTokens is logged as any refusal is (before: nothing, a timeout or a bug left no trace);
// - a POST to a path with no route under /v1/ or /v1beta/ is the documented 404 whatever its body: a multipart upload
//   (`/v1/audio/transcriptions`, as the OpenAI SDK sends it) was a 415, a bad JSON body a 400.

import t from 'tap';
import { Writable } from 'node:stream';
import { parse } from 'yaml';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { testConfig } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';
import { tempDir } from '../helpers/tmp.js';

let mode = 'html';
const upstream = await listenLoopback(t, async (req, res) => {
  for await (const _ of req);
  if (mode === 'html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy login</html>');
  if (mode === 'error') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'quota gone' } }));
  if (mode === 'redirect') return void res.writeHead(302, { location: 'http://elsewhere.invalid/' }).end('moved');
  if (mode === 'odd') return void res.writeHead(799).end('?');
  if (mode === 'hang') return; // never answers: the provider's request_s cuts it
  const gemini = req.url!.includes(':countTokens');
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(gemini ? { totalTokens: 7 } : { input_tokens: 7 }));
}, (err, res) => res.writeHead(500).end(String(err)));

const logged: Record<string, unknown>[] = [];
const sink = new Writable({ write(chunk, _e, done) { for (const line of String(chunk).split('\n')) if (line) logged.push(JSON.parse(line)); done(); } });
const holder = new ConfigHolder(testConfig(parse(`
providers:
  ant: { group: paid, format: anthropic, base_url: 'http://127.0.0.1:${upstream.port}', auth: { type: api_key, key: k }, price: { input: 1, output: 1 }, models: { m: {} }, timeouts: { request_s: 1 } }
  gem: { group: paid, format: gemini, base_url: 'http://127.0.0.1:${upstream.port}/v1beta', auth: { type: api_key, key: k }, price: { input: 1, output: 1 }, models: { m: {} }, timeouts: { request_s: 1 } }
`) as Record<string, unknown>, tempDir(t)));
const app = await build({ config: holder, logger: { level: 'info', stream: sink }, processMetrics: false });
await app.listen({ host: '127.0.0.1', port: 0 });
t.teardown(() => app.close());
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

const counts = {
  anthropic: () => fetch(`${base}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'ant/m', messages: [{ role: 'user', content: 'hi' }] }) }),
  gemini: () => fetch(`${base}/v1beta/models/gem/m:countTokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) }),
};

t.test('the counters: a count passes; what the message paths refuse is a 502 UPSTREAM_PROTOCOL', async (t) => {
  for (const [name, call] of Object.entries(counts)) {
    mode = 'count';
    const ok = await call();
    t.equal(ok.status, 200, `${name}: a count`);
    t.match(await ok.json(), name === 'gemini' ? { totalTokens: 7 } : { input_tokens: 7 });
    for (const [m, said] of [['html', /not JSON/], ['error', /an error and no answer: quota gone/], ['redirect', /redirect \(302\)/], ['odd', /status 799/]] as const) {
      mode = m;
      const res = await call();
      const body = (await res.json()) as { error: { code: string; message: string } };
      t.equal(res.status, 502, `${name}, ${m}: 502`);
      t.equal(body.error.code, 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', `${name}, ${m}: the upstream's protocol failing`);
      t.match(body.error.message, said);
    }
  }
});

t.test('a failed Gemini countTokens is logged, as the Anthropic counter\'s is', async (t) => {
  mode = 'hang';
  for (const [name, call] of Object.entries(counts)) {
    const before = logged.length;
    const res = await call();
    t.equal(res.status, 504, `${name}: timed out`);
    await res.text();
    const line = logged.slice(before).find((l) => l.code === 'TOLLGATE_ERR_UPSTREAM_TIMEOUT');
    t.ok(line, `${name}: logged`);
    t.notMatch(String(line?.path), /\?/, `${name}: the path only`);
  }
});

t.test('a POST with no route is a 404 whatever its body', async (t) => {
  const form = new FormData();
  form.append('model', 'x/whisper');
  form.append('file', new Blob([new Uint8Array(16)]), 'a.wav');
  for (const [path, init] of [
    ['/v1/audio/transcriptions', { body: form }],
    ['/v1/images/edits', { body: form }],
    ['/v1/embeddings', { headers: { 'content-type': 'application/json' }, body: '{"model": ' }],
    ['/v1/responses/resp_1/cancel', { headers: { 'content-type': 'application/json' }, body: '' }],
    ['/v1beta/files', { headers: { 'content-type': 'text/plain' }, body: 'x' }],
  ] as const) {
    const res = await fetch(`${base}${path}`, { method: 'POST', ...init });
    const body = (await res.json()) as { error: { code: string; message: string } };
    t.equal(res.status, 404, path);
    t.equal(body.error.code, 'TOLLGATE_ERR_NOT_FOUND', path);
    t.match(body.error.message, `no route for POST ${path}`);
  }
  // A Gemini call's bad body is still that call's 400.
  const bad = await fetch(`${base}/v1beta/models/gem/m:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"contents": ' });
  t.equal(bad.status, 400, 'a Gemini call with a bad body: 400');
});
