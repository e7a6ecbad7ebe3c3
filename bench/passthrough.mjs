// The baseline: the least a Node proxy has to do. Fastify parses the JSON body, an undici Pool (same settings as
// Tollgate's dispatcher) forwards it, and the body comes back unchanged: buffered for JSON, piped for SSE.
// No routing, auth, usage parsing, metrics, spans or storage.
//
//   node bench/passthrough.mjs <upstream origin> [port]     (started by bench/run.mjs; port 0 unless given)

import Fastify from 'fastify';
import { Pool } from 'undici';
import { announceReady, cpuMicros, serveParent } from './lib/ipc.mjs';

const upstream = process.argv[2];
if (!upstream) throw new Error('usage: passthrough.mjs <upstream origin>');

const pool = new Pool(upstream, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });
const app = Fastify({ logger: false, bodyLimit: 128 * 1024 * 1024 });

app.post('/v1/chat/completions', async (req, reply) => {
  const stream = req.body?.stream === true;
  const res = await pool.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify(req.body),
  });
  reply.code(res.statusCode).header('content-type', res.headers['content-type'] ?? 'application/json');
  if (stream) return reply.send(res.body);
  return reply.send(await res.body.text());
});

await app.listen({ host: '127.0.0.1', port: Number(process.argv[3] ?? 0) });
serveParent({
  cpu: () => cpuMicros(),
  stop: async () => {
    await app.close();
    await pool.close();
  },
});
announceReady({ url: `http://127.0.0.1:${app.server.address().port}` });
