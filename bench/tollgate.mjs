// Tollgate under test, in its own process: the compiled app from `build()`, recording ON (embedded chdb store in
// the given fresh directory), logger off, one `openai` provider with a price pointing at the fake upstream.
// Storage batching is the shipped default. Telemetry is as main.ts leaves it without an OTLP endpoint (the
// OpenTelemetry API's no-op tracer) unless spans are asked for (below).
//
//   node bench/tollgate.mjs <upstream origin> <data dir> [memory-spool | server <clickhouse url> | spans <otlp url>]
//
// With `memory-spool`, the batch writer's spool keeps rows in memory (bench/lib/memory-spool.mjs): the same gateway
// without the disk spool, to measure what the spool costs. With `server <url>`, the store is the ClickHouse server at
// that URL (the server path: the engine is not loaded in this process; the spool is on disk as shipped). With
// `spans <url>`, spans are exported over OTLP/HTTP to that endpoint (bench/otlp-sink.mjs).

import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { build } from '../dist/app.js';
import { parseConfig } from '../dist/config/load.js';
import { startTelemetry } from '../dist/telemetry/otel.js';
import { announceReady, cpuMicros, serveParent } from './lib/ipc.mjs';
import { UPSTREAM_MODEL } from './lib/payloads.mjs';
import { MemorySpool } from './lib/memory-spool.mjs';

const [upstream, dataDir, spoolKind, kindUrl] = process.argv.slice(2);
const clickhouseUrl = spoolKind === 'server' ? kindUrl : undefined;
// `spans <url>` (or BENCH_OTLP=<url>, for bench/ab.mjs): spans exported over OTLP/HTTP to that endpoint.
const otlpUrl = spoolKind === 'spans' ? kindUrl : process.env.BENCH_OTLP;
if (!upstream || !dataDir) throw new Error('usage: tollgate.mjs <upstream origin> <data dir>');
// The parent removes the directory too; this covers a parent that was killed outright.
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));

const config = parseConfig(
  {
    // No collection when quiet (server.idle_gc_s): the run's targets take turns, so each idles ~10 s between its
    // slices, which a gateway under steady load never does; collecting there would start each slice with a young
    // generation to grow again. The footprint's gateways keep the default (bench/lib/footprint.mjs).
    // BENCH_API_KEY: the gateway with one key configured, which the load sends (bench/lib/load.mjs): the keyed path
    // every production gateway takes (the key's check, the wrong-key limiter's look-up).
    server: { host: '127.0.0.1', port: 0, idle_gc_s: 0, ...(process.env.BENCH_API_KEY ? { api_keys: [{ name: 'bench', key: process.env.BENCH_API_KEY }] } : {}) },
    storage: {
      data_dir: dataDir, database: 'tollgate', ...(clickhouseUrl ? { clickhouse_url: clickhouseUrl } : {}),
      // Diagnostics only: BENCH_FLUSH_MS overrides storage.batch.flush_ms (the shipped default otherwise).
      ...(process.env.BENCH_FLUSH_MS ? { batch: { flush_ms: Number(process.env.BENCH_FLUSH_MS) } } : {}),
    },
    providers: {
      bench: {
        name: 'Bench upstream (OpenAI-compatible)',
        group: 'paid',
        format: 'openai',
        base_url: `${upstream}/v1`,
        auth: { type: 'api_key', key: 'sk-bench-upstream' },
        price: { input: 0.15, output: 0.6, cached: 0.075 },
        models: { [UPSTREAM_MODEL]: { kind: 'llm', capabilities: ['tools'] } },
      },
    },
  },
  {}, // no environment: PORT and friends must not leak into the benchmark
  '(bench)',
);

// Spans exported (`spans <url>`, BENCH_OTLP): the SDK started as main.ts starts it with telemetry.otlp_endpoint set
// (one SERVER span a request and one CLIENT span an upstream call), so the span is recorded as the row and the
// metrics are. Otherwise the OpenTelemetry API's no-op tracer, as main.ts leaves it without an endpoint.
const telemetry = otlpUrl ? await startTelemetry({ ...config, telemetry: { ...config.telemetry, otlp_endpoint: otlpUrl } }, {}) : null;
const app = await build({ config, logger: false, processMetrics: true, ...(spoolKind === 'memory-spool' ? { spool: (o) => new MemorySpool(o.columns) } : {}) });
await app.listen({ host: '127.0.0.1', port: 0 });
// The store opens in the background after listening: measured once it is open (startup is bench/lib/footprint.mjs's).
await app.tollgate.storeReady;
// Diagnostics only (BENCH_NO_ALERTS=1): the alert evaluator stopped, to measure what its reads cost under load.
if (process.env.BENCH_NO_ALERTS === '1') await app.tollgate.alerting.close();
const { writer, store, metrics } = app.tollgate;

// Diagnostics only: count the inserts the batch writer makes (how well it batches: `insertLines`, which a segment
// goes through as it is and `insert` too, with its rows as lines, when ClickHouse refused one as data) and the reads
// the gateway's own background work makes (quota snapshot, budget, alert evaluator) under load, by wrapping this
// instance's methods; rows and SQL are untouched.
const inserts = { calls: 0, rows: 0, ms: 0 };
const reads = { calls: 0, rows: 0, ms: 0 };
function counted(method, into, rowsOf) {
  const original = store[method].bind(store);
  store[method] = async (...args) => {
    const t0 = performance.now();
    try {
      return await original(...args);
    } finally {
      into.calls++;
      into.rows += rowsOf(args);
      into.ms += performance.now() - t0;
    }
  };
}
counted('insertLines', inserts, ([, lines]) => lines.length);
counted('query', reads, () => 0);

// Diagnostics only (BENCH_NO_RECORD): what Tollgate's record costs it. `1`: the ledger hands nothing to its sinks (no
// begin marker, row, metrics, live monitor entry or alert poke: the request is served and not recorded); or a list of
// the parts left out: `marker` (the spool's begin markers), `insert` (rows spooled, never inserted), `metrics`,
// `alerts` (the alert evaluator's checks after each record and each insert; its 15 s timer stays). The rows alone
// are not a part: a row ends its request's marker and the budget's count of records not yet stored, which would
// grow for the whole run. Without rows in the store the run's row check reports them missing. Applied after the
// counting above, so an insert left out is not counted as one.
const LEAVE_OUT = {
  1: () => {
    app.tollgate.ledger.begin = () => undefined;
    app.tollgate.ledger.publish = () => undefined;
  },
  marker: () => (writer.begin = () => undefined),
  insert: () => (store.insertLines = async () => undefined),
  metrics: () => (metrics.observe = () => undefined),
  alerts: () => (app.tollgate.alerting.alerts.poke = () => undefined),
};
for (const part of (process.env.BENCH_NO_RECORD ?? '').split(',').filter(Boolean)) {
  if (!Object.hasOwn(LEAVE_OUT, part)) throw new Error(`BENCH_NO_RECORD: '${part}' is not one of ${Object.keys(LEAVE_OUT).join(', ')}`);
  LEAVE_OUT[part]();
}

serveParent({
  cpu: () => cpuMicros(),
  reads: () => ({ ...reads }),
  /** Drain the writer, then count what ClickHouse holds. */
  count: async () => {
    await writer.flush();
    const [r] = await store.query(
      `SELECT count() AS rows, countIf(stream) AS streamed, countIf(status = 'success') AS success,
              sum(total_tokens) AS tokens, toString(sum(cost)) AS cost
       FROM ${store.t('requests')} FINAL`,
    );
    const dropped = (await metrics.rowsDropped.get()).values.reduce((s, v) => s + v.value, 0);
    return {
      rows: Number(r.rows),
      streamed: Number(r.streamed),
      success: Number(r.success),
      tokens: Number(r.tokens),
      cost: r.cost,
      dropped,
      queued: writer.depth,
      inserts,
    };
  },
  /**
   * Export the spans still queued (`spans <url>` or BENCH_OTLP): the SDK's shutdown flushes them. Then what the gateway
   * says became of its spans, from its own /metrics (tollgate_spans_total, tollgate_spans_queued), to hold beside what
   * the receiver counted.
   */
  flushSpans: async () => {
    await telemetry?.shutdown();
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const value = (series) => Number(text.split('\n').find((line) => line.startsWith(`${series} `))?.slice(series.length + 1) ?? NaN);
    const counted = Object.fromEntries(['exported', 'failed', 'dropped'].map((r) => [r, value(`tollgate_spans_total{result="${r}"}`)]));
    return { ...counted, queued: value('tollgate_spans_queued') };
  },
  stop: () => app.close(),
});
announceReady({ url: `http://127.0.0.1:${app.server.address().port}` });
