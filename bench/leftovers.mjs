#!/usr/bin/env node
// A start on a spool an earlier process left (docs/benchmarks.md, "A start on a large spool"; docs/recording.md,
// "Restart"): the compiled gateway (`dist/main.js`) is started on a data directory whose spool holds N rows in
// segments of 10,000 (what the batch writer seals), with `storage.clickhouse_url` at a closed port, so the store is
// down and the rows stay: what is measured is the start and the reading of the leftovers, not their insert. Each size
// is started `BENCH_LEFTOVERS_ROUNDS` times (default 3) on a fresh copy of its spool; the medians are printed.
//
//   npm run bench:leftovers                                  (about a minute)
//   BENCH_LEFTOVERS_ROWS=0,100000,1000000 node bench/leftovers.mjs
//   BENCH_LEFTOVERS_MAIN=/tmp/old/dist/main.js node bench/leftovers.mjs   (another build, e.g. an earlier commit's)
//
// One table: per spool size, the time from spawn to `/health`, to the first proxied 200 (a request sent as soon as
// /health answers), to the end of the reading (/ready stops saying the spool is reading), that first request's own
// time, and the process's peak RSS (VmHWM). The empty spool is the baseline of the same run: its ratios are what to
// compare (these machines are shared and noisy). Each start must find every row (`tollgate_usage_rows_recovered_total`).

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { guardRun, runMain } from './lib/main.mjs';
import { median } from './lib/stats.mjs';
import { makeRecord } from '../dist/ledger/record.js';
import { REQUEST_COLUMNS, toRow } from '../dist/store/rows.js';
import { headerLine, rowLine } from '../dist/store/segment.js';

const log = (m) => process.stderr.write(`[bench:leftovers] ${m}\n`);
const SIZES = (process.env.BENCH_LEFTOVERS_ROWS ?? '0,200000,1000000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_LEFTOVERS_ROUNDS ?? 3);
if (SIZES.some((n) => !Number.isInteger(n) || n < 0) || !Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error('BENCH_LEFTOVERS_ROWS: integers >= 0; BENCH_LEFTOVERS_ROUNDS: an integer >= 1');
const PER_SEGMENT = 10_000;
// Another build's main.js (an earlier commit's, built in its own tree) to compare with: BENCH_LEFTOVERS_MAIN.
const MAIN = resolve(process.env.BENCH_LEFTOVERS_MAIN ?? resolve(import.meta.dirname, '../dist/main.js'));
let child = null;
const guard = guardRun({ log, limitS: 20 * 60, killAll: () => child?.kill('SIGKILL') });

/** A port nothing listens on (taken, then given back). */
async function freePort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** `rows` rows of the demo provider, in segments as the writer seals them, under `dir`. */
function writeSpool(dir, rows) {
  mkdirSync(dir, { recursive: true });
  const at = Date.now() - 600_000;
  const sample = rowLine(REQUEST_COLUMNS, toRow(makeRecord({
    kind: 'request', requestId: randomUUID(), startedAt: at, endedAt: at + 400, endpoint: 'chat.completions', provider: 'demo', providerGroup: 'paid',
    model: 'demo/echo-1', requestedModel: 'demo/echo-1', modelKnown: true, apiKeyName: 'anonymous', stream: false, status: 'success', httpStatus: 200,
    errorType: '', usage: { input: 12, cached: null, cacheWrite: null, output: 30, reasoning: null }, usageSource: 'reported',
    cost: { cost: 0.000072, listCost: 0.000072 }, latency: { kind: 'unary', totalMs: 400 }, upstreamMs: 380,
  })));
  const tail = sample.slice(sample.indexOf('",') + 1);
  for (let s = 0; s * PER_SEGMENT < rows; s++) {
    const n = Math.min(PER_SEGMENT, rows - s * PER_SEGMENT);
    const lines = Array.from({ length: n }, () => `["${randomUUID()}"${tail}\n`);
    writeFileSync(join(dir, `${at + s}-0bec4000-${String(s + 1).padStart(6, '0')}.jsonl`), headerLine(REQUEST_COLUMNS) + lines.join(''));
  }
}

const peakRssMiB = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

async function startOnce(dataDir, port, storePort) {
  writeFileSync(join(dataDir, 'config.yaml'), [
    'server: { host: 127.0.0.1, port: ' + port + ' }',
    `storage: { clickhouse_url: "http://127.0.0.1:${storePort}", data_dir: "${dataDir}" }`,
    'providers:',
    '  demo: { name: Demo, group: paid, format: mock, price: { input: 1, output: 2 }, mock: { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }, models: { echo-1: { kind: llm } } }',
    '',
  ].join('\n'));
  const t0 = performance.now();
  child = spawn(process.execPath, [MAIN, '--config', join(dataDir, 'config.yaml')], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const until = async (ok, what) => {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the gateway exited before ${what}`);
      try {
        if (await ok()) return performance.now() - t0;
      } catch {}
      await sleep(5);
    }
  };
  const health = await until(async () => (await fetch(`${url}/health`)).ok, '/health');
  const sent = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hello' }] }) });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`the first request answered ${res.status}`);
  const first = performance.now() - t0;
  const firstMs = performance.now() - sent;
  const read = await until(async () => !(await (await fetch(`${url}/ready`)).text()).includes('the spool is reading'), 'the end of the reading');
  const rss = peakRssMiB(child.pid);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const found = Number(/^tollgate_usage_rows_recovered_total (\d+)/m.exec(metrics)?.[1] ?? NaN);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  child = null;
  return { health, first, firstMs, read, rss, found };
}

async function main() {
  const root = guard.dataDir('tollgate-bench-leftovers-');
  const storePort = await freePort();
  const rows = [];
  for (const size of SIZES) {
    const master = join(root, `spool-${size}`);
    writeSpool(master, size);
    const runs = [];
    for (let r = 0; r < ROUNDS; r++) {
      const dataDir = join(root, `run-${size}-${r}`);
      cpSync(master, join(dataDir, 'spool'), { recursive: true });
      runs.push(await startOnce(dataDir, await freePort(), storePort));
      if (runs.at(-1).found !== size) throw new Error(`${size} rows left, but the gateway found ${runs.at(-1).found}`);
      rmSync(dataDir, { recursive: true, force: true });
      log(`${size} rows, round ${r + 1}: /health ${runs.at(-1).health.toFixed(0)} ms, read ${runs.at(-1).read.toFixed(0)} ms`);
    }
    rmSync(master, { recursive: true, force: true });
    const m = (k) => median(runs.map((x) => x[k]));
    rows.push({ size, health: m('health'), first: m('first'), firstMs: m('firstMs'), read: m('read'), rss: m('rss') });
  }
  const base = rows[0];
  const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}x` : '');
  console.log(`\nA start on a spool an earlier process left (${MAIN}): medians of ${ROUNDS} starts each (the store down; the empty spool first is the baseline)\n`);
  console.log('| rows left | /health | first 200 (its own time) | reading done | peak RSS | /health vs the first row | peak RSS vs the first row |');
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(`| ${r.size.toLocaleString('en-US')} | ${r.health.toFixed(0)} ms | ${r.first.toFixed(0)} ms (${r.firstMs.toFixed(0)} ms) | ${r.read.toFixed(0)} ms | ${r.rss.toFixed(0)} MiB | ${ratio(r.health, base.health)} | ${ratio(r.rss, base.rss)} |`);
  }
  return 0;
}

runMain(main, { log, cleanup: guard.cleanup });
