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

export interface OtlpReceiver {
  readonly url: string;
  /** The spans it took (answered 200). */
  readonly spans: OtlpSpan[];
  readonly paths: string[];
  /** The status it answers with: 200 takes the spans; 400 refuses them (not retryable, per the OTLP/HTTP spec). */
  status: number;
}

/** An OTLP/HTTP receiver (JSON): every span POSTed to /v1/traces. */
export async function otlpReceiver(t: Teardown): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      paths.push(req.url ?? '');
      if (receiver.status !== 200) {
        res.writeHead(receiver.status, { 'content-type': 'application/json' }).end('{"code":3,"message":"refused by the test"}');
        return;
      }
      const doc = JSON.parse(Buffer.concat(parts).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
      for (const rs of doc.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const addr = server.address();
  const receiver: OtlpReceiver = { url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, spans, paths, status: 200 };
  return receiver;
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

/** A chat completion to the app at `url` for `oa/gpt-4o` (the fake OpenAI provider of these tests): its status, its body read. */
export async function askChat(url: string, content: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'oa/gpt-4o', messages: [{ role: 'user', content }] }),
  });
  await res.json();
  return res.status;
}
