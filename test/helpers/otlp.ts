// An OTLP/HTTP trace receiver on loopback (the JSON encoding, what the gateway's exporter sends): every span POSTed to
// /v1/traces, and the paths posted to. Closed at teardown.

import { createServer } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { build } from '../../src/app.js';
import type { Config } from '../../src/config/types.js';
import type { Teardown } from './tmp.js';

export interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: readonly { readonly key: string; readonly value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver (JSON): every span POSTed to /v1/traces. */
export async function otlpReceiver(t: Teardown): Promise<{ url: string; spans: OtlpSpan[]; paths: string[] }> {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      paths.push(req.url ?? '');
      const doc = JSON.parse(Buffer.concat(parts).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
      for (const rs of doc.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const addr = server.address();
  return { url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, spans, paths };
}

/**
 * An app on loopback with the process's own tracer provider (the SDK a test started with startTelemetry, as main.ts
 * does), not the in-memory one of helpers/app.ts; its store open. Closed at teardown.
 */
export async function startGlobalTracedApp(t: Teardown, config: Config): Promise<{ app: FastifyInstance; url: string }> {
  const app = await build({ config, logger: false, processMetrics: false });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  await app.tollgate.storeReady;
  const addr = app.server.address();
  return { app, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
}
