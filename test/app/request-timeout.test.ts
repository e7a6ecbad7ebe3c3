// server.request_timeout_s: a client has that long to send its whole request. A body announced and never sent held
// its socket (a file descriptor) for ever (fastify's default turns Node's request timeout off): enough of them and the
// gateway answered nothing. Past the limit the request is answered in the error shape and the socket closed; a slow
// answer is not bounded by it.

import t from 'tap';
import { connect } from 'node:net';
import { once } from 'node:events';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';

const gw = await startApp(t, {
  server: { request_timeout_s: 1 },
  providers: { demo: { ...DEMO_PROVIDER, mock: { chunks: 3, latency_ms: 1500, chunk_delay_ms: 0 } } },
});

t.test('a body that never comes: answered "not received in time" and the socket closed', async (t) => {
  const { port } = new URL(gw.url);
  const socket = connect(Number(port), '127.0.0.1');
  t.teardown(() => socket.destroy());
  await once(socket, 'connect');
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{');
  let answer = '';
  const started = Date.now();
  let answeredAt = 0;
  socket.on('data', (c: Buffer) => {
    answer += c.toString('utf8');
    answeredAt ||= Date.now() - started;
  });
  await once(socket, 'close');
  const took = Date.now() - started;
  t.match(answer, /^HTTP\/1\.1 400 [\s\S]*"code":"TOLLGATE_ERR_BAD_REQUEST","message":"the request was not received in time"/, 'answered in the error shape');
  t.ok(answeredAt > 0 && took < 10_000, `answered after ${answeredAt} ms and closed after ${took} ms: within seconds of the 1 s limit, not held`);
  // the record says what the client was told (a review of limits: it said a client that left, 499 client_closed)
  let rows: Record<string, unknown>[] = [];
  for (let i = 0; i < 50 && rows.length === 0; i++) {
    rows = await gw.rows("endpoint = 'chat.completions'");
    if (rows.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  t.match(rows, [{ status: 'failure', http_status: 400, error_type: 'TOLLGATE_ERR_BAD_REQUEST' }], 'the row: the 400 it was answered');
  // the answer carries the row's id, as every data-plane answer does (it is written before the request's handler exists)
  const headerId = /\r\nx-request-id: ([0-9a-f-]{36})\r\n/i.exec(answer)?.[1];
  t.equal(headerId, rows[0]?.request_id, 'x-request-id is the row\'s request_id');
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: { request_id: unknown } };
  t.equal(body.error.request_id, rows[0]?.request_id, 'and so is the error body\'s request_id');
  t.match(await gw.metrics(), /tollgate_requests_total\{[^}]*status="failure"[^}]*\} 1/, 'counted as a failure');
});

t.test('an answer slower than the limit is not cut', async (t) => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200, 'a 1.5 s answer with a 1 s request limit');
  t.match(((await res.json()) as { choices: unknown[] }).choices, [{}]);
});
