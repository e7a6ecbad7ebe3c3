// An upstream that misbehaves, through the OpenAI Chat fast path, the translated path and the same-format passthrough:
// - an error body that quotes the key it was sent ("Incorrect API key provided: Bearer sk-...") reaches the client
//   with the key replaced by [REDACTED]: before, any client, a `user` key's included, could read the provider's key;
// - a redirect (the gateway follows none: it would carry the key elsewhere) or a status past 599 is the upstream's
//   protocol failing: 502 TOLLGATE_ERR_UPSTREAM_PROTOCOL, and a fallback combo moves on (before: a 302 relayed with
//   no Location, never retried; 999 a 502 "connection failed");
// - a JSON answer to a stream request on the fast path is refused before any byte, as docs/errors.md says and as the
//   translated path did (before: a 200 JSON body to a client that asked for a stream, recorded a billed success);
// - a 200 whose body is `null` or an array is the upstream's protocol failing, not the gateway crashing and calling it
//   a connection failure (before: a TypeError on `null.id`, logged with its stack, answered UPSTREAM_CONNECT).

import t from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';

const KEY = 'sk-upstream-SECRET-0123456789';
const ANT_KEY = 'sk-ant-upstream-SECRET-987654321';
const FN_KEY = 'FNKEYq1w2e3r4t5y6u7i8o9p';
const SLASH_KEY = 'SLKEY/ab12cd34/ef56+gh78';

const chatAnswer = JSON.stringify({
  id: 'c1', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});

const upstream = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  for await (const _ of req);
  const mode = req.url!.split('/')[1]!;
  const auth = String(req.headers.authorization ?? req.headers['x-api-key'] ?? '');
  switch (mode) {
    case 'echo':
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${auth}. Also: ${auth.replace(/^Bearer /, '')}`, type: 'invalid_request_error' } }));
      return;
    case 'headers': {
      // A self-hosted server echoing the headers it was sent, JSON-encoded as PHP's json_encode writes it (`/` as `\/`).
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'unauthorized', received: req.headers } }).replaceAll('/', '\\/'));
      return;
    }
    case 'sseerr':
      // A 200 stream whose error event quotes the key it was sent (OpenAI Chat's in-band error shape).
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ error: { message: `invalid key: ${auth}`, type: 'invalid_request_error' } })}\n\n`);
      return;
    case 'antsseerr':
      // The same from an Anthropic upstream: `event: error` after the stream began.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${auth}` } })}\n\n`);
      return;
    case 'ant200err':
      // A 200 whose body is an Anthropic error object quoting the key.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${auth}` } }));
      return;
    case 'antcount':
      // A token counter that answers 200 and quotes the headers it was sent.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 3, received: req.headers }));
      return;
    case 'redirect':
      res.writeHead(302, { location: 'http://example.invalid/elsewhere', 'content-type': 'text/plain' });
      res.end('moved');
      return;
    case 'odd':
      res.writeHead(999, { 'content-type': 'application/json' });
      res.end('{}');
      return;
    case 'json':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(chatAnswer);
      return;
    case 'err200':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `Rate limit reached for ${auth.replace(/^Bearer /, '')}`, type: 'rate_limit', code: 429 } }));
      return;
    case 'null':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('null');
      return;
    default:
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(chatAnswer);
  }
}, (err, res) => res.destroy(err as Error));

const oa = (mode: string) => ({ group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${upstream.port}/${mode}/v1`, auth: { type: 'api_key', key: KEY }, models: { m: {} } });
const gw = await startApp(t, {
  providers: {
    echo: oa('echo'), redirect: oa('redirect'), odd: oa('odd'), json: oa('json'), nul: oa('null'), good: oa('good'),
    antecho: { group: 'paid', format: 'anthropic', base_url: `http://127.0.0.1:${upstream.port}/echo`, auth: { type: 'api_key', key: ANT_KEY }, models: { m: {} } },
    err200: oa('err200'),
    // A credential in the provider's own headers (auth none), and a key holding '/': both echoed back by 'headers'.
    fnkey: { group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${upstream.port}/headers/v1`, auth: { type: 'none' }, headers: { 'X-Functions-Key': FN_KEY }, models: { m: {} } },
    slash: { ...oa('headers'), auth: { type: 'api_key', key: SLASH_KEY } },
    sseerr: oa('sseerr'),
    ...Object.fromEntries(['antsseerr', 'ant200err', 'antcount'].map((m) => [m, { group: 'paid', format: 'anthropic', base_url: `http://127.0.0.1:${upstream.port}/${m}`, auth: { type: 'api_key', key: ANT_KEY }, models: { m: {} } }])),
    anterr200: { group: 'paid', format: 'anthropic', base_url: `http://127.0.0.1:${upstream.port}/err200`, auth: { type: 'api_key', key: ANT_KEY }, models: { m: {} } },
  },
  combos: { fb: { strategy: 'fallback', models: ['redirect/m', 'odd/m', 'good/m'] }, fb2: { strategy: 'fallback', models: ['err200/m', 'good/m'] } },
});

async function post(path: string, body: Record<string, unknown>): Promise<{ status: number; text: string; id: string | null; type: string | null }> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text(), id: res.headers.get('x-request-id'), type: res.headers.get('content-type') };
}
const chat = (model: string, stream = false) => post('/v1/chat/completions', { model, stream, messages: [{ role: 'user', content: 'hello' }] });
const messages = (model: string) => post('/v1/messages', { model, max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] });
const rowOf = async (id: string | null) => {
  await gw.flush();
  return (await gw.rows(`request_id = '${id}'`))[0];
};

t.test("an error body that quotes the provider's key reaches the client without it, on every path", async (t) => {
  for (const [name, call, key] of [
    ['the fast path', () => chat('echo/m'), KEY],
    ['the translated path', () => messages('echo/m'), KEY],
    ['the Anthropic passthrough', () => messages('antecho/m'), ANT_KEY],
  ] as const) {
    const a = await call();
    t.equal(a.status, 401, `${name}: the upstream's status`);
    t.notMatch(a.text, key.slice(3), `${name}: no part of the key`);
    t.match(a.text, /Incorrect API key provided: (Bearer )?\[REDACTED\]\. Also: \[REDACTED\]/, `${name}: the rest of the message as it came`);
  }
});

t.test("a credential in the provider's headers, and a key the upstream quotes JSON-escaped, reach the client as [REDACTED]", async (t) => {
  for (const [model, key] of [['fnkey/m', FN_KEY], ['slash/m', SLASH_KEY]] as const) {
    for (const [name, call] of [['the fast path', () => chat(model)], ['the translated path', () => messages(model)]] as const) {
      const a = await call();
      t.equal(a.status, 401, `${model}, ${name}: the upstream's status`);
      const body = JSON.parse(a.text) as { error: { received: Record<string, string> } };
      t.notMatch(a.text, key.slice(5, 13), `${model}, ${name}: no part of the key, in any form`);
      t.notMatch(JSON.stringify(body), key.slice(5), `${model}, ${name}: nor once the JSON is read`);
      const echoed = model === 'fnkey/m' ? body.error.received['x-functions-key'] : body.error.received.authorization;
      t.match(echoed, /\[REDACTED\]$/, `${model}, ${name}: the header's value replaced`);
      t.equal(body.error.received['content-type'], 'application/json', `${model}, ${name}: the other headers as they came`);
    }
  }
});

// An error the upstream reports inside a 200 (a stream's error event, an error object as the whole answer, a counter's
// answer) reached the client with the key in it on every path but the fast path's whole answer.
t.test('an error the upstream reports inside a 200 reaches the client without the key, on every path', async (t) => {
  const cases: [string, () => Promise<{ status: number; text: string }>, string][] = [
    ['the fast path, streamed', () => chat('sseerr/m', true), KEY],
    ['the translated path, streamed (Anthropic client, Chat upstream)', () => post('/v1/messages', { model: 'sseerr/m', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }), KEY],
    ['the Anthropic passthrough, streamed', () => post('/v1/messages', { model: 'antsseerr/m', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }), ANT_KEY],
    ['the translated path, a whole error object (Chat client, Anthropic upstream)', () => chat('ant200err/m'), ANT_KEY],
    ['count_tokens, a 200 quoting its headers', () => post('/v1/messages/count_tokens', { model: 'antcount/m', messages: [{ role: 'user', content: 'hello' }] }), ANT_KEY],
  ];
  for (const [name, call, key] of cases) {
    const a = await call();
    t.notMatch(a.text, key.slice(3), `${name}: no part of the key`);
    t.match(a.text, /\[REDACTED\]/, `${name}: the key's place marked (${a.status})`);
  }
});

t.test('a redirect or a status past 599 is a protocol failure (502), and a fallback combo moves on', async (t) => {
  for (const model of ['redirect/m', 'odd/m']) {
    const a = await chat(model);
    t.equal(a.status, 502, model);
    t.match(JSON.parse(a.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' } });
    t.match(await rowOf(a.id), { status: 'failure', http_status: 502, error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
  }
  const c = await chat('fb');
  t.equal(c.status, 200, 'the combo answered from its third member');
  t.match(JSON.parse(c.text), { choices: [{ message: { content: 'hi' } }] });
});

t.test('a stream request answered with JSON on the fast path: 502 before any byte, recorded a failure', async (t) => {
  const a = await chat('json/m', true);
  t.equal(a.status, 502);
  t.match(a.type, /application\/json/);
  t.match(JSON.parse(a.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', message: /not an event stream/ } });
  t.match(await rowOf(a.id), { status: 'failure', error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
});

t.test('a 200 whose body is null is the upstream failing, not a connection failure', async (t) => {
  const a = await chat('nul/m');
  t.equal(a.status, 502);
  t.match(JSON.parse(a.text), { error: { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', message: /null/ } });
  t.match(await rowOf(a.id), { error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' });
});

t.test('a 200 that carries an error and no answer is a failure (502, quoted, redacted), and a fallback combo moves on', async (t) => {
  const a = await chat('err200/m');
  t.equal(a.status, 502);
  const body = JSON.parse(a.text) as { error: { code: string; message: string } };
  t.equal(body.error.code, 'TOLLGATE_ERR_UPSTREAM_PROTOCOL');
  t.match(body.error.message, /an error and no answer: Rate limit reached for \[REDACTED\]/);
  t.notMatch(a.text, KEY.slice(3));
  t.match(await rowOf(a.id), { status: 'failure', error_type: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', usage_source: 'none' });
  const p = await messages('anterr200/m');
  t.equal(p.status, 502, 'the passthrough too');
  const c = await chat('fb2');
  t.equal(c.status, 200, 'the combo answered from its next member');
});
