// The recording floor: the least a gateway that records every request the way Tollgate must can do, measured beside
// Tollgate to tell the cost of recording itself from the cost of the rest of the gateway (issue 17: "show the profile
// that proves where the floor is"). It is the bare passthrough (bench/passthrough.mjs: fastify, the same undici Pool)
// plus, for each request, only the recording's own work:
//
//   - the answer's usage read: the JSON answer parsed; for a stream, every SSE frame parsed as it passes (Tollgate
//     drops a frame that is not JSON, so it parses each) while the bytes go on as they came (no frames written again);
//   - a row with the columns Tollgate writes (`toRow` of the built app, checked at start), serialised once by the
//     spool's own `rowLine`: its values in the columns' order, a JSON array;
//   - the spool: one write(2) per event-loop turn for that turn's rows, an fsync every `commit_ms` (50 by default), a new file
//     for each batch, removed once the batch is inserted;
//   - the metrics: the request, token, cost and duration series a request updates (the gateway's own families);
//   - the store: every `flush_ms` (2 s by default) the batch's lines inserted through the built app's Store (the embedded engine,
//     the same migrations, views, settings and deduplication token as Tollgate's writer).
//
// Not done here, and done by Tollgate: authentication and rate limits, routing, the request's validation and
// translation, a begin marker per request (what records a request cut by `kill -9`), a record built for the live
// monitor, the alert evaluator's and the quota's reads, spans (no-op in the benchmark in both). Never used outside
// bench/.
//
//   node bench/floor.mjs <upstream origin> <data dir>     (started by bench/run.mjs)

import { closeSync, fsync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { join } from 'node:path';
import Fastify from 'fastify';
import { Pool } from 'undici';
import { Registry } from 'prom-client';
import { openStore } from '../dist/store/client.js';
import { migrate } from '../dist/store/migrations.js';
import { REQUEST_COLUMNS, toRow } from '../dist/store/rows.js';
import { rowLine } from '../dist/store/segment.js';
import { makeRecord } from '../dist/ledger/record.js';
import { CounterFamily, HistogramFamily } from '../dist/telemetry/families.js';
import { BUCKETS } from '../dist/telemetry/names.js';
import { CONFIG_SCHEMA } from '../dist/config/schema.js';
import { announceReady, cpuMicros, serveParent } from './lib/ipc.mjs';
import { UPSTREAM_MODEL } from './lib/payloads.mjs';

const [upstream, dataDir] = process.argv.slice(2);
if (!upstream || !dataDir) throw new Error('usage: floor.mjs <upstream origin> <data dir>');
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));

// The spool's commit and the batch's flush at Tollgate's shipped defaults (BENCH_FLUSH_MS as bench/tollgate.mjs reads it),
// so the floor inserts as often as the gateway beside it.
const STORAGE = CONFIG_SCHEMA.properties.storage.properties;
const COMMIT_MS = STORAGE.spool.properties.commit_ms.default;
const FLUSH_MS = process.env.BENCH_FLUSH_MS ? Number(process.env.BENCH_FLUSH_MS) : STORAGE.batch.properties.flush_ms.default;
const PROVIDER = 'bench';
const MODEL = `${PROVIDER}/${UPSTREAM_MODEL}`;
// USD per million tokens, as bench/tollgate.mjs configures its provider; cost in integer pico-dollars as Tollgate's.
const PRICE = { input: 150_000, output: 600_000, cached: 75_000 };

const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: join(dataDir, 'store'), username: '', password: '' });
await migrate(store);

// ---- metrics: the series a request updates, in the gateway's own families (a child resolved once, then arithmetic:
// the cheapest update the project has; prom-client's labels() hashes and validates the labels on every call) ----
const registry = new Registry();
const labels = [PROVIDER, MODEL];
const requests = new CounterFamily('floor_requests_total', 'requests', ['provider', 'model', 'status'], registry).child(...labels, 'success');
const tokensFamily = new CounterFamily('floor_tokens_total', 'tokens', ['provider', 'model', 'type'], registry);
const tokens = Object.fromEntries(['input', 'cached', 'output', 'reasoning'].map((t) => [t, tokensFamily.child(...labels, t)]));
const cost = new CounterFamily('floor_cost_usd_total', 'cost', ['provider', 'model', 'group'], registry).child(...labels, 'paid');
const duration = new HistogramFamily('floor_duration_seconds', 'duration', ['provider', 'model'], BUCKETS.operationDuration, registry).child(...labels);
const usageFamily = new HistogramFamily('floor_token_usage', 'token usage', ['provider', 'model', 'type'], BUCKETS.tokenUsage, registry);
const usageIn = usageFamily.child(...labels, 'input');
const usageOut = usageFamily.child(...labels, 'output');

// ---- the spool: a file per batch, one write(2) a turn, an fsync every COMMIT_MS ----
const spoolDir = join(dataDir, 'spool');
mkdirSync(spoolDir, { recursive: true });
let seq = 0;
const newSegment = () => {
  const name = `${String(++seq).padStart(8, '0')}.jsonl`;
  const path = join(spoolDir, name);
  return { name, path, fd: openSync(path, 'a'), lines: [] };
};
let open = newSegment();
let pending = [];
let scheduled = false;
let dirty = false;
const writeOut = () => {
  scheduled = false;
  const buf = Buffer.from(pending.join(''));
  pending = [];
  let off = 0;
  while (off < buf.length) off += writeSync(open.fd, buf, off);
  dirty = true;
};
const commit = setInterval(() => {
  if (!dirty) return;
  dirty = false;
  fsync(open.fd, () => undefined);
}, COMMIT_MS);

// Diagnostics only (FLOOR_STORE=0): batches are dropped instead of inserted, to measure what the engine's share is.
const INSERT = process.env.FLOOR_STORE !== '0';
let inserted = 0;
let insertChain = Promise.resolve();
const flush = () => {
  if (scheduled) writeOut();
  if (open.lines.length === 0) return insertChain;
  const seg = open;
  open = newSegment();
  insertChain = insertChain.then(async () => {
    if (INSERT) await store.insertLines('requests', seg.lines, `floor-${process.pid}-${seg.name}`, REQUEST_COLUMNS);
    inserted += seg.lines.length;
    closeSync(seg.fd);
    rmSync(seg.path, { force: true });
  });
  return insertChain;
};
const flusher = setInterval(() => flush().catch((err) => process.stderr.write(`[floor] insert failed: ${err.message}\n`)), FLUSH_MS);

// ---- the row: Tollgate's columns ----
function rowOf(startedAt, endedAt, stream, n, usd, ttftMs) {
  return {
    request_id: randomUUID(), kind: 'request', parent_id: null, combo: '', attempt: 0, connection: 'default', auto_switched: false,
    ts: startedAt, end_ts: endedAt, endpoint: '/v1/chat/completions', provider: PROVIDER, provider_group: 'paid', model: MODEL,
    requested_model: MODEL, api_key_name: '_anonymous', stream, status: 'success', http_status: 200, error_type: '',
    input_tokens: n.input, audio_input_tokens: 0, cached_tokens: n.cached, cache_write_tokens: 0, cache_write_1h_tokens: null,
    output_tokens: n.output, audio_output_tokens: 0, reasoning_tokens: n.reasoning, web_search_requests: null,
    total_tokens: n.input + n.output, usage_source: n.reported ? 'reported' : 'none', cost: usd, list_cost: usd, price_source: 'config', service_tier: '',
    duration_ms: endedAt - startedAt, ttft_ms: ttftMs, upstream_ms: endedAt - startedAt, trace_id: '', dispatched: true,
  };
}

// The floor writes what Tollgate writes: the same columns, in the same order.
{
  const mine = Object.keys(rowOf(0, 1, false, { input: 0, cached: 0, output: 0, reasoning: 0, reported: false }, '0', null));
  const expected = Object.keys(toRow(makeRecord({
    requestId: 'x', startedAt: 0, endedAt: 1, endpoint: '/v1/chat/completions', provider: PROVIDER, providerGroup: 'paid', model: MODEL,
    requestedModel: MODEL, modelKnown: true, apiKeyName: '_anonymous', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 0, cached: 0, cacheWrite: 0, output: 0, reasoning: 0 }, usageSource: 'none', cost: { cost: 0, listCost: 0, priceSource: 'config' },
    latency: { kind: 'plain', totalMs: 1 }, upstreamMs: 1,
  })));
  if (mine.join(',') !== expected.join(',')) throw new Error(`floor row columns differ from toRow's: ${mine.join(',')} vs ${expected.join(',')}`);
  if (mine.join(',') !== REQUEST_COLUMNS.join(',')) throw new Error(`floor row columns differ from the spool's: ${mine.join(',')} vs ${REQUEST_COLUMNS.join(',')}`);
}

// Diagnostics only (FLOOR_RECORD=0): nothing recorded (the engine loaded and idle), to tell its presence from its work.
const RECORD = process.env.FLOOR_RECORD !== '0';
function record(startedAt, stream, u, ttftMs) {
  if (!RECORD) return;
  const endedAt = Date.now();
  const n = {
    input: u?.prompt_tokens ?? 0, cached: u?.prompt_tokens_details?.cached_tokens ?? 0,
    output: u?.completion_tokens ?? 0, reasoning: u?.completion_tokens_details?.reasoning_tokens ?? 0, reported: u != null,
  };
  const pico = (n.input - n.cached) * PRICE.input + n.cached * PRICE.cached + n.output * PRICE.output;
  const line = rowLine(REQUEST_COLUMNS, rowOf(startedAt, endedAt, stream, n, (pico / 1e12).toFixed(12), ttftMs));
  open.lines.push(line);
  pending.push(`${line}\n`);
  if (!scheduled) {
    scheduled = true;
    setImmediate(writeOut);
  }
  requests.inc();
  tokens.input.inc(n.input - n.cached);
  tokens.cached.inc(n.cached);
  tokens.output.inc(n.output - n.reasoning);
  tokens.reasoning.inc(n.reasoning);
  cost.inc(pico / 1e12);
  duration.observe((endedAt - startedAt) / 1000);
  usageIn.observe(n.input);
  usageOut.observe(n.output);
}

// ---- the proxy: bench/passthrough.mjs with the recording above ----
const pool = new Pool(upstream, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });
const app = Fastify({ logger: false, bodyLimit: 128 * 1024 * 1024 });

app.post('/v1/chat/completions', async (req, reply) => {
  const startedAt = Date.now();
  const stream = req.body?.stream === true;
  const res = await pool.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify({ ...req.body, model: UPSTREAM_MODEL }),
  });
  reply.code(res.statusCode).header('content-type', res.headers['content-type'] ?? 'application/json');
  if (!stream) {
    const text = await res.body.text();
    const answer = JSON.parse(text);
    record(startedAt, false, answer.usage ?? null, null);
    return reply.send(text);
  }
  // Every frame parsed on the side while the bytes go on unchanged.
  let usage = null;
  let ttftMs = null;
  let rest = '';
  const utf8 = new StringDecoder('utf8');
  res.body.on('data', (chunk) => {
    rest += utf8.write(chunk);
    let end;
    while ((end = rest.indexOf('\n\n')) !== -1) {
      const frame = rest.slice(0, end);
      rest = rest.slice(end + 2);
      if (!frame.startsWith('data: ')) continue;
      const data = frame.slice(6);
      if (data === '[DONE]') continue;
      let obj;
      try {
        obj = JSON.parse(data);
      } catch {
        continue;
      }
      if (ttftMs === null && obj.choices?.[0]?.delta?.content) ttftMs = Date.now() - startedAt;
      if (obj.usage) usage = obj.usage;
    }
  });
  res.body.on('end', () => record(startedAt, true, usage, ttftMs));
  return reply.send(res.body);
});

await app.listen({ host: '127.0.0.1', port: 0 });
serveParent({
  cpu: () => cpuMicros(),
  /** Insert what is spooled, then count what ClickHouse holds. */
  count: async () => {
    await flush();
    const [r] = await store.query(`SELECT count() AS rows, countIf(stream) AS streamed FROM ${store.t('requests')} FINAL`);
    // With a diagnostic switch on, nothing (or nothing stored) is there to count.
    return { rows: Number(r.rows), streamed: Number(r.streamed), inserted, checked: RECORD && INSERT };
  },
  stop: async () => {
    clearInterval(flusher);
    clearInterval(commit);
    await app.close();
    await pool.close();
    await flush().catch(() => undefined);
    await store.close();
  },
});
announceReady({ url: `http://127.0.0.1:${app.server.address().port}` });
