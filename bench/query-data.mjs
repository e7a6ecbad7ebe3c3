// The data child of the query benchmark (bench/queries.mjs): opens the embedded ClickHouse on the given directory,
// runs the migrations, fills `requests` server-side (INSERT ... SELECT FROM numbers(), in chunks; the materialized
// view fills `usage_hourly` as they go in), waits for background merges to settle, then times the month summary
// straight from the raw table (the "no rollup" baseline) and through store/aggregate.ts, both in this process with
// no HTTP. It reports to the parent and exits when told to, so the directory is free for the app's process (chdb
// allows one data directory per process).
//
//   node bench/query-data.mjs <data dir> <rows> <raw runs> [ordered|spread]     (started by bench/queries.mjs)

import { performance } from 'node:perf_hooks';
import { openStore } from '../dist/store/client.js';
import { migrate } from '../dist/store/migrations.js';
import { total } from '../dist/store/aggregate.js';
import { announceReady, serveParent } from './lib/ipc.mjs';
import { DAY_MS, DB, insertSql } from './lib/query-fixture.mjs';

const [dataDir, rowsArg, runsArg, layoutArg = 'ordered'] = process.argv.slice(2);
// ordered: chunk k holds the k-th slice of the span, oldest first (inserts in time order, as a gateway makes them);
// spread: every chunk spans the whole 45 days (every hour and day of the rollups in every part: the worst case).
const LAYOUT = layoutArg;
if (LAYOUT !== 'ordered' && LAYOUT !== 'spread') throw new Error(`layout must be ordered or spread, not '${LAYOUT}'`);
const ROWS = Number(rowsArg);
const RUNS = Number(runsArg);
if (!dataDir || !(ROWS > 0) || !(RUNS > 0)) throw new Error('usage: query-data.mjs <data dir> <rows> <raw runs>');
const CHUNK = 1_000_000;
const SPAN_MS = 45 * DAY_MS;
const MERGE_WAIT_MS = 120_000;

const log = (msg) => process.stderr.write(`[bench:data] ${msg}\n`);
const store = openStore({ clickhouse_url: '', data_dir: dataDir, database: DB, username: 'default', password: '' });
await migrate(store);

const nowMs = Date.now();
const t0 = performance.now();
const chunks = Math.ceil(ROWS / CHUNK);
for (let start = 0; start < ROWS; start += CHUNK) {
  const count = Math.min(CHUNK, ROWS - start);
  const slice = LAYOUT === 'ordered' ? { index: start / CHUNK, of: chunks } : undefined;
  await store.command(insertSql({ start, count, nowMs, spanMs: SPAN_MS, slice }));
  log(`inserted ${start + count}/${ROWS} rows (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
}
const generateS = (performance.now() - t0) / 1000;

// Background merges would otherwise keep running in the app's process and land in the measurements.
const t1 = performance.now();
let merging = 0;
for (;;) {
  [{ merging }] = (await store.query(`SELECT count() AS merging FROM system.merges WHERE database = '${DB}'`)).map((r) => ({ merging: Number(r.merging) }));
  if (merging === 0 || performance.now() - t1 > MERGE_WAIT_MS) break;
  await new Promise((r) => setTimeout(r, 500));
}
const mergeWaitS = (performance.now() - t1) / 1000;

const parts = Object.fromEntries(
  (await store.query(`SELECT table, count() AS parts, sum(rows) AS rows FROM system.parts WHERE database = '${DB}' AND active GROUP BY table`)).map(
    (r) => [r.table, { parts: Number(r.parts), rows: Number(r.rows) }],
  ),
);
const [shape] = await store.query(
  `SELECT count() AS rows, countIf(kind = 'request') AS request, countIf(kind = 'combo') AS combo, countIf(kind = 'attempt') AS attempt,
     countIf(kind = 'keepalive') AS keepalive, countIf(status = 'success') AS success,
     toUnixTimestamp64Milli(min(ts)) AS oldest, toUnixTimestamp64Milli(max(ts)) AS newest
   FROM ${DB}.requests FINAL`,
);

// The month summary two ways, interleaved, same engine and data: straight from the raw rows (FINAL, as every raw read
// of the app does), and through aggregate() (rollup for whole hours + raw FINAL for the partial edge hours).
const month = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).getTime();
const rawSql = `SELECT count() AS n, sum(total_tokens) AS tokens, toString(sum(cost)) AS cost FROM ${DB}.requests FINAL
  WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')`;
const timings = { raw: [], aggregate: [] };
const time = async (fn) => {
  const s = performance.now();
  const out = await fn();
  return { ms: performance.now() - s, out };
};
let check = null;
for (let i = -2; i < RUNS; i++) {
  const raw = await time(() => store.query(rawSql, { from: month }));
  const agg = await time(() => total(store, { from: month, to: Date.now() + 1 }));
  if (i >= 0) {
    timings.raw.push(raw.ms);
    timings.aggregate.push(agg.ms);
  }
  check = { raw: { rows: Number(raw.out[0].n), tokens: Number(raw.out[0].tokens) }, aggregate: { rows: agg.out.rows, tokens: agg.out.tokens } };
}
log(`raw month summary ${check.raw.rows} rows / ${check.raw.tokens} tokens; aggregate() ${check.aggregate.rows} rows / ${check.aggregate.tokens} tokens`);

serveParent({ stop: () => store.close() });
announceReady({
  generateS, mergeWaitS, stillMerging: merging, parts, nowMs, layout: LAYOUT,
  shape: Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, Number(v)])),
  timings, check,
});
