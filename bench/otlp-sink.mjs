// An OTLP/HTTP trace receiver for the benchmark, in its own process (bench/run.mjs): POST /v1/traces with the JSON
// encoding (what Tollgate's exporter sends), answered 200 with an empty body, as a collector does. It counts the spans
// it received by kind (a request's SERVER span, an upstream call's CLIENT span), so the run can check that every
// request it sent has its spans, as it checks the rows.
//
//   node bench/otlp-sink.mjs     (started by bench/run.mjs when BENCH_SPANS is on)

import { createServer } from 'node:http';
import { announceReady, cpuMicros, serveParent } from './lib/ipc.mjs';

const KIND = { 1: 'internal', 2: 'server', 3: 'client', 4: 'producer', 5: 'consumer' };
const counts = { posts: 0, bytes: 0, spans: 0, byKind: {}, unreadable: 0 };

const server = createServer((req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    counts.posts++;
    counts.bytes += body.length;
    if (req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    try {
      const doc = JSON.parse(body.toString('utf8'));
      for (const rs of doc.resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) {
          for (const span of ss.spans ?? []) {
            counts.spans++;
            const kind = KIND[span.kind] ?? String(span.kind);
            counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
          }
        }
      }
    } catch {
      counts.unreadable++;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

serveParent({
  cpu: () => cpuMicros(),
  count: () => ({ ...counts, byKind: { ...counts.byKind } }),
  stop: () => new Promise((resolve) => server.close(() => resolve(null))),
});
announceReady({ url: `http://127.0.0.1:${server.address().port}` });
