// openEventStream (src/pipeline/reply.ts) checks the reply's header values before it takes the response over: a value
// Node cannot send is removed and a TollgateError (TOLLGATE_ERR_INTERNAL) thrown while fastify still owns the reply,
// so the client gets an answer in the error shape. Before, reply.hijack() came first and writeHead threw after it: nobody answered and the
// client hung (the relay then took the TypeError for an upstream connect failure). A real fastify server on 127.0.0.1.

import t from 'tap';
import Fastify from 'fastify';
import { TollgateError } from '../../src/core/errors.js';
import { openEventStream } from '../../src/pipeline/reply.js';

const app = Fastify();
let seen: { code: string; hijacked: boolean; odd: boolean } | null = null;
app.get('/sse', async (req, reply) => {
  reply.header('x-odd', (req.query as { v: string }).v);
  try {
    const raw = openEventStream(reply, 30_000);
    raw.end('data: ok\n\n');
  } catch (err) {
    // As the gateway's error path does: answer with the error, if the reply is still fastify's to send.
    seen = { code: err instanceof TollgateError ? err.code : String((err as { code?: unknown }).code), hijacked: reply.sent, odd: reply.hasHeader('x-odd') };
    return reply.code(500).send({ error: { code: seen.code } });
  }
  return reply;
});
await app.listen({ host: '127.0.0.1', port: 0 });
t.teardown(() => app.close());
const port = (app.server.address() as { port: number }).port;

t.test('a header value Node cannot send: an error before the stream opens, answered; valid ones open it', async (t) => {
  const res = await fetch(`http://127.0.0.1:${port}/sse?v=${encodeURIComponent('a\u0000b')}`, { signal: AbortSignal.timeout(3000) }).catch((e: Error) => e);
  t.notOk(res instanceof Error, 'the client has an answer');
  if (res instanceof Error) return;
  t.equal(res.status, 500);
  t.same(await res.json(), { error: { code: 'TOLLGATE_ERR_INTERNAL' } });
  t.same(seen, { code: 'TOLLGATE_ERR_INTERNAL', hijacked: false, odd: false }, 'thrown before hijack, as the gateway\'s own error, the bad header gone');

  // Valid values: the stream opens with them.
  const ok = await fetch(`http://127.0.0.1:${port}/sse?v=plain`, { signal: AbortSignal.timeout(3000) });
  t.equal(ok.status, 200);
  t.equal(ok.headers.get('x-odd'), 'plain');
  t.match(ok.headers.get('content-type'), /^text\/event-stream/);
  t.equal(await ok.text(), 'data: ok\n\n');
});
