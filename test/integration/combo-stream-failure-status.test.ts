// A combo whose last member fails inside its event stream before any output (an error event first, a stall, a closed
// socket): the client gets that failure as a JSON error with its status (502 or 504), and the client request's row
// and span say that status, what the client got (docs/recording.md, `http_status`). Before, they kept the member's
// 200 (the upstream did answer 200 before the stream broke). The attempt's own row keeps the upstream's 200.

import t from 'tap';
import { createServer, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { startApp } from '../helpers/app.js';
import { fakeProvider } from '../helpers/fake-openai.js';

// An OpenAI-compatible upstream that answers 200 with the SSE headers and then does what the case says, before any
// chunk: the fake of test/helpers/fake-openai.ts opens every stream with the role chunk, which reaches the client.
type Then = 'error-event' | 'silence' | 'close';
const queue: Then[] = [];
const open = new Set<ServerResponse>();
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    const then = queue.shift() ?? 'close';
    if (then === 'error-event') res.end(`data: ${JSON.stringify({ error: { message: 'overloaded', type: 'server_error', code: 'overloaded' } })}\n\n`);
    else if (then === 'close') setTimeout(() => res.socket?.destroy(), 20);
    else open.add(res);
  });
});
upstream.listen(0, '127.0.0.1');
await once(upstream, 'listening');
t.teardown(() => {
  for (const res of open) res.socket?.destroy();
  upstream.close();
});
const addr = upstream.address();
const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/v1`;

const gw = await startApp(t, {
  providers: { a: fakeProvider(base) },
  combos: { solo: { strategy: 'fallback', models: ['a/gpt-4o'] } },
  routing: { cooldown: { initial_s: 0.001, max_s: 0.001, multiplier: 1 } },
});

const cases: [string, Then, number, string][] = [
  ['an error event first', 'error-event', 502, 'TOLLGATE_ERR_UPSTREAM_PROTOCOL'],
  ['headers, then silence', 'silence', 504, 'TOLLGATE_ERR_UPSTREAM_STALL'],
  ['headers, then the socket closed', 'close', 502, 'TOLLGATE_ERR_UPSTREAM_CONNECT'],
];

for (const [name, then, status, code] of cases) {
  t.test(`${name}: the client request's row and span say the ${status} the client got`, async (t) => {
    queue.push(then);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'solo', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = (await res.json()) as { error: { code: string } };
    t.equal(res.status, status, 'the client got the failure with its status');
    t.equal(body.error.code, code);
    const id = res.headers.get('x-request-id')!;
    await gw.flush();
    const [combo] = await gw.rows(`toString(request_id) = '${id}'`);
    t.match(combo, { kind: 'combo', status: 'failure', http_status: status }, 'the client request row: the status the client got');
    const [attemptRow] = await gw.rows(`toString(parent_id) = '${id}'`);
    t.match(attemptRow, { kind: 'attempt', status: 'failure' }, 'its attempt row');
    const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === id)!;
    t.equal(span.attributes['http.response.status_code'], status, 'the SERVER span too');
  });
}
