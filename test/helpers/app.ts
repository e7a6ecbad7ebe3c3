// Build a real Tollgate app on a real socket (127.0.0.1, port 0) with the embedded store in a temp directory and
// an in-memory span exporter; everything is closed at teardown.

import type { FastifyInstance } from 'fastify';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { build } from '../../src/app.js';
import { parseConfig } from '../../src/config/load.js';
import { ConfigHolder } from '../../src/config/watch.js';
import type { Config } from '../../src/config/types.js';
import { memoryTracing } from './spans.js';
import { tempDir, type Teardown } from './tmp.js';

export interface TestApp {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly holder: ConfigHolder;
  readonly spans: InMemorySpanExporter;
  /** Wait until every queued usage row is in ClickHouse. */
  flush(): Promise<void>;
  /** Rows of the requests table, oldest first (FINAL: deduplicated). */
  rows(where?: string): Promise<Record<string, unknown>[]>;
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/** A config object from YAML-shaped input; storage.data_dir defaults to `dataDir`. */
export function testConfig(raw: Record<string, unknown>, dataDir: string, env: Record<string, string> = {}): Config {
  const storage = { data_dir: dataDir, batch: { flush_ms: Number(process.env.TEST_FLUSH_MS ?? 50) }, ...((raw.storage as object) ?? {}) };
  return parseConfig({ ...raw, storage }, env);
}

export async function startApp(
  t: Teardown,
  raw: Record<string, unknown>,
  opts: { dataDir?: string; env?: Record<string, string>; configFile?: string } = {},
): Promise<TestApp> {
  const dataDir = opts.dataDir ?? tempDir(t);
  const holder = new ConfigHolder(testConfig(raw, dataDir, opts.env));
  const { provider, exporter } = memoryTracing();
  const app = await build({
    config: holder, tracerProvider: provider, logger: false, processMetrics: false, ...(opts.configFile === undefined ? {} : { configFile: opts.configFile }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
  };
  t.teardown(close);
  // The store opens in the background once the app listens; the suites test a gateway that has started.
  await app.tollgate.storeReady;
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    holder,
    spans: exporter,
    flush: () => app.tollgate.writer.flush(),
    rows: async (where = '1') => {
      await app.tollgate.writer.flush();
      const s = app.tollgate.store;
      return s.query<Record<string, unknown>>(`SELECT * FROM ${s.t('requests')} FINAL WHERE ${where} ORDER BY ts, request_id`);
    },
    metrics: async () => app.tollgate.metrics.registry.metrics(),
    close,
  };
}

/** The shipped demo provider, small and fast, for tests that need a working upstream without a socket. */
export const DEMO_PROVIDER = {
  name: 'Demo',
  group: 'paid',
  format: 'mock',
  price: { input: 1, output: 2, cached: 0.5 },
  mock: { chunks: 5, latency_ms: 0, chunk_delay_ms: 0 },
  models: { 'echo-1': { kind: 'llm' } },
};

/**
 * A config file's text for tests that serve or edit one: a loopback host, the data directory, a 50 ms flush, then
 * `rest` (YAML: the providers, and any other section).
 */
export function configFileText(dataDir: string, rest: string): string {
  return `server:\n  host: 127.0.0.1\nstorage:\n  data_dir: ${dataDir}\n  batch: { flush_ms: 50 }\n${rest}`;
}

/** The demo provider as a YAML `providers:` block, for tests that write a config file for the built CLI. */
export function demoProvidersYaml(mock: { chunks: number; latency_ms: number; chunk_delay_ms: number } = { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }): string {
  return `providers:
  demo:
    name: Demo
    group: paid
    format: mock
    price: { input: 1, output: 2 }
    mock: { chunks: ${mock.chunks}, latency_ms: ${mock.latency_ms}, chunk_delay_ms: ${mock.chunk_delay_ms} }
    models: { echo-1: { kind: llm } }
`;
}

/**
 * A gateway on a real socket, with one `sub` provider whose daily quota is `limit` tokens, on `dataDir`, not waited for
 * past its listen (a start that reads what an earlier process left in the spool): the app and its URL.
 */
export async function listenOn(t: Teardown, dataDir: string, limit = 1e9): Promise<{ app: FastifyInstance; url: string }> {
  const config = testConfig({ providers: { sub: { ...DEMO_PROVIDER, group: 'subscription', quota: { kind: 'daily_tokens', limit } } } }, dataDir);
  const app = await build({ config: new ConfigHolder(config), logger: false, processMetrics: false });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  return { app, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
}
