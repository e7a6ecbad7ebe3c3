#!/usr/bin/env node
// Tollgate benchmark: the same closed-loop load three ways, each server in its own process on 127.0.0.1.
//
//   direct       load generator -> fake upstream
//   passthrough  load generator -> bare Fastify + undici proxy -> fake upstream      (the baseline)
//   floor        load generator -> the passthrough plus only the recording's own work (bench/floor.mjs: the usage
//                read, a row, the spool, the metrics, the embedded store's inserts) -> fake upstream: what
//                recording costs by itself, beside what Tollgate costs
//   tollgate     load generator -> Tollgate build(), recording to embedded ClickHouse -> fake upstream
//   tollgate-memspool  the same Tollgate with its spool in memory (no file, no fsync): the spool's cost is the
//                      ratio of the two
//   tollgate-server    the same Tollgate on the server path: its store is a ClickHouse server in another process
//                      (test/helpers/clickhouse-http.ts), whose CPU is counted with Tollgate's
//   tollgate-spans     the same Tollgate exporting its spans over OTLP/HTTP to a receiver in another process
//                      (bench/otlp-sink.mjs): the record's third part, which the shipped default (no endpoint) skips
//
// Scenarios: non-streaming JSON (the headline) and streaming SSE with include_usage. Each target gets a warm-up,
// then its measured time is split into BENCH_SLICES slices interleaved with the other targets' (a shared machine
// drifts; interleaving makes the drift hit every target alike). At the end Tollgate's writer is flushed and the
// rows in ClickHouse are compared with the requests sent to it (warm-up included). Prints one table and the
// acceptance check; exits non-zero when the run failed (errors, rows missing, a crash), not when the ratio is low.
//
//   npm run bench
//   BENCH_DURATION_S=8 BENCH_WARMUP_S=2 BENCH_SLICES=4 BENCH_CONCURRENCY=32 BENCH_STREAM_CONCURRENCY=32 npm run bench
//   BENCH_SCENARIOS=json npm run bench   # one scenario only (json or sse)
//   BENCH_CPU_PROF=1 npm run bench       # V8 CPU profiles of the two proxies in bench/results/profiles/
//   BENCH_NODE_ARGS="--perf-basic-prof"  # extra node flags for the passthrough and Tollgate children

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAll, startChild } from './lib/ipc.mjs';
import { Load } from './lib/load.mjs';
import { REQUEST_BODY, STREAM_REQUEST_BODY } from './lib/payloads.mjs';
import { guardRun, runMain } from './lib/main.mjs';
import { measureReadsUnderLoad } from './lib/reads-under-load.mjs';
import { machineTicks, mainThreadMicros, measureFootprint, measureStart, procCpuMicros, startClickHouseServer, threadTicks, tickShares, treeMiB } from './lib/footprint.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');

function envNumber(name, fallback, { min = 0, integer = false } = {}) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    throw new Error(`${name}=${raw}: expected ${integer ? 'an integer' : 'a number'} >= ${min}`);
  }
  return n;
}

const DURATION_S = envNumber('BENCH_DURATION_S', 8, { min: 0.5 });
const WARMUP_S = envNumber('BENCH_WARMUP_S', 2, { min: 0 });
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 32, { min: 1, integer: true });
const STREAM_CONCURRENCY = envNumber('BENCH_STREAM_CONCURRENCY', CONCURRENCY, { min: 1, integer: true });
const SLICES = envNumber('BENCH_SLICES', 4, { min: 1, integer: true });
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
const PROFILE_DIR = join(HERE, 'results', 'profiles');
const ACCEPT_RATIO = 0.5;
// Issue 17's targets, printed beside each figure in the summary table.
const TARGETS_17 = { json: 0.75, sse: 0.7, startMs: 500, idleEmbeddedMiB: 250, idleServerMiB: 90, readP99Ms: 50 };
const START_ROUNDS = envNumber('BENCH_START_ROUNDS', 9, { min: 1, integer: true });
const IDLE_S = envNumber('BENCH_IDLE_S', 5, { min: 0 });
const SETTLE_S = envNumber('BENCH_SETTLE_S', 30, { min: IDLE_S });
// After the idle figures, each gateway (and the passthrough) takes a burst at c=BENCH_CONCURRENCY and idles again.
const BURST_REQUESTS = envNumber('BENCH_BURST_REQUESTS', 5000, { min: 1, integer: true });
const LOADED_READS_S = envNumber('BENCH_LOADED_READS_S', 10, { min: 0 });
const FOOTPRINT = process.env.BENCH_FOOTPRINT !== '0';
// The target with spans exported over OTLP (on by default; 0 leaves it out of a quick run).
const SPANS = process.env.BENCH_SPANS !== '0';

const ALL_SCENARIOS = [
  { key: 'json', label: 'non-streaming', body: REQUEST_BODY, stream: false, concurrency: CONCURRENCY },
  { key: 'sse', label: 'streaming SSE', body: STREAM_REQUEST_BODY, stream: true, concurrency: STREAM_CONCURRENCY },
];
// BENCH_SCENARIOS=json or =sse runs one scenario only (for profiling); the default runs both.
const SCENARIOS = ALL_SCENARIOS.filter((s) => (process.env.BENCH_SCENARIOS || 'json,sse').split(',').includes(s.key));
if (SCENARIOS.length === 0) throw new Error('BENCH_SCENARIOS: expected a comma-separated subset of json,sse');
const TARGETS = ['direct', 'passthrough', 'floor', 'tollgate', 'tollgate-memspool', 'tollgate-server', ...(SPANS ? ['tollgate-spans'] : [])];

const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

// Everything must stop by itself: a watchdog well above the planned run time, and every exit path kills children.
const plannedS = TARGETS.length * SCENARIOS.length * (DURATION_S + WARMUP_S) + 30 + (FOOTPRINT ? START_ROUNDS * 10 + 5 * 10 + 2 * SETTLE_S + 30 : 0);
const guard = guardRun({ log, limitS: plannedS * 3 + 180, killAll });

function execArgvFor(name) {
  if (name === 'upstream' || name === 'otlp-sink') return [];
  // BENCH_NODE_ARGS: extra node flags for the two proxies (e.g. --perf-basic-prof for `perf record`).
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  if (!CPU_PROF) return extra;
  mkdirSync(PROFILE_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return [...extra, '--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${name}.${stamp}.cpuprofile`];
}

async function start(name, args = []) {
  const execArgv = execArgvFor(name);
  // Profiling flags may write files into the working directory (--perf-basic-prof writes isolate-*.log): keep
  // them in bench/results/.
  let cwd;
  if (execArgv.length > 0) {
    cwd = join(HERE, 'results');
    mkdirSync(cwd, { recursive: true });
  }
  const child = startChild(name, join(HERE, `${name}.mjs`), args, { execArgv, cwd });
  const info = await child.ready;
  log(`${name} ready at ${info.url} (pid ${child.pid})`);
  return { child, url: info.url };
}

const rotate = (a, n) => a.map((_, i) => a[(i + n) % a.length]);

/**
 * One scenario against every target: a warm-up per target, then SLICES rounds in which each target is measured for
 * DURATION_S / SLICES seconds (the order rotates every round), so slow drifts of a shared machine hit all targets
 * alike. Server CPU is sampled around each measured slice; for Tollgate the CPU it burns between its own slices
 * (background merges of the embedded ClickHouse) is reported separately.
 */
async function runScenario(scenario, servers) {
  const loads = Object.fromEntries(
    TARGETS.map((t) => [
      t,
      new Load({ origin: servers[t].url, path: '/v1/chat/completions', body: scenario.body, stream: scenario.stream, concurrency: scenario.concurrency }),
    ]),
  );
  // inSlices/between: all the process's threads; main: its main thread (the event loop: a proxy's rate is bound by
  // it); wall: the slices' time; busy/ticks: the whole machine's CPU over the slices (every process on it).
  const cpu = Object.fromEntries(TARGETS.map((t) => [t, { inSlices: 0, between: 0, lastEnd: null, main: 0, wall: 0, busy: 0, ticks: 0 }]));
  // A server that died cannot be sampled: its CPU becomes n/a, and the load counts its errors.
  // The server path's CPU is Tollgate's plus its ClickHouse server's (another process on the same cores).
  const sample = (t) => servers[t].child.request('cpu').then((us) => us + (servers[t].extraPid ? procCpuMicros(servers[t].extraPid) : 0)).catch(() => NaN);
  try {
    for (const t of TARGETS) {
      log(`${scenario.label} x${scenario.concurrency}: warm-up ${t} ${WARMUP_S} s`);
      await loads[t].run(WARMUP_S * 1000, false);
    }
    const sliceMs = (DURATION_S * 1000) / SLICES;
    for (let round = 0; round < SLICES; round++) {
      const line = [];
      for (const t of rotate(TARGETS, round)) {
        const c0 = await sample(t);
        if (cpu[t].lastEnd !== null) cpu[t].between += c0 - cpu[t].lastEnd;
        const m0 = mainThreadMicros(servers[t].child.pid);
        const k0 = machineTicks();
        const w0 = performance.now();
        const rps = await loads[t].run(sliceMs, true);
        const w1 = performance.now();
        const k1 = machineTicks();
        const m1 = mainThreadMicros(servers[t].child.pid);
        const c1 = await sample(t);
        cpu[t].inSlices += c1 - c0;
        cpu[t].lastEnd = c1;
        cpu[t].main += m1 - m0;
        cpu[t].wall += (w1 - w0) * 1000;
        cpu[t].busy += k1.busy - k0.busy;
        cpu[t].ticks += k1.total - k0.total;
        line.push(`${t} ${Math.round(rps)}`);
      }
      log(`${scenario.label} x${scenario.concurrency}: slice ${round + 1}/${SLICES} req/s: ${line.join(', ')}`);
    }
  } finally {
    await Promise.all(Object.values(loads).map((l) => l.close()));
  }
  return TARGETS.map((t) => {
    const r = loads[t].summary();
    for (const [kind, n] of r.errorKinds) log(`${t} / ${scenario.label}: error x${n}: ${kind}`);
    const per = (us) => (r.windowRequests > 0 ? us / r.windowRequests : NaN);
    const c = cpu[t];
    return {
      target: t,
      scenario,
      ...r,
      cpuPerReq: per(c.inSlices),
      cpuBetweenPerReq: per(c.between),
      mainPerReq: per(c.main),
      // The main thread's share of one core over the slices, and the machine's busy CPUs (2 = both cores busy).
      mainBusy: c.wall > 0 ? c.main / c.wall : NaN,
      machineBusy: c.ticks > 0 ? (c.busy / c.ticks) * cpus().length : NaN,
    };
  });
}

function table(results) {
  const head = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'vs passthrough', 'server CPU µs/req', 'main thread µs/req', 'main thread busy', 'machine busy CPUs'];
  const rows = results.map((r) => {
    const base = results.find((b) => b.scenario.key === r.scenario.key && b.target === 'passthrough');
    const ratio = base && base.rps > 0 ? `${Math.round((r.rps / base.rps) * 100)}%` : 'n/a';
    return [
      `${r.scenario.label} x${r.scenario.concurrency}`,
      r.target,
      String(Math.round(r.rps)),
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      String(r.errors),
      ratio,
      Number.isFinite(r.cpuPerReq) ? String(Math.round(r.cpuPerReq)) : 'n/a',
      Number.isFinite(r.mainPerReq) ? String(Math.round(r.mainPerReq)) : 'n/a',
      Number.isFinite(r.mainBusy) ? `${Math.round(r.mainBusy * 100)}%` : 'n/a',
      Number.isFinite(r.machineBusy) ? r.machineBusy.toFixed(2) : 'n/a',
    ];
  });
  const numeric = [false, false, true, true, true, true, true, true, true, true, true];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => (numeric[i] ? c.padStart(width[i]) : c.padEnd(width[i]))).join(' | ')} |`;
  const rule = `|${width.map((w, i) => (numeric[i] ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(head), rule, ...rows.map(line)].join('\n');
}

/** The newest `npm run bench:queries` result (bench/results/queries.*.md): its worst /api p99, or null. */
function latestQueries() {
  const dir = join(HERE, 'results');
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => /^queries\..*\.md$/.test(f)).sort() : [];
  if (files.length === 0) return null;
  // The issue's figure is at 10M rows: the newest run at that size or more, else the newest of any size (labelled).
  const rowsOf = (f) => Number(/(\d+) rows in requests/.exec(readFileSync(join(dir, f), 'utf8').slice(0, 400))?.[1] ?? NaN);
  const file = files.findLast((f) => rowsOf(f) >= 10_000_000) ?? files.at(-1);
  const text = readFileSync(join(dir, file), 'utf8');
  const rows = text.split('\n').filter((l) => l.startsWith('| GET /')).map((l) => l.split('|').map((c) => c.trim()));
  const api = rows.filter((c) => c[1].startsWith('GET /api/')).map((c) => ({ label: c[1], p99: Number(c[4]) })).filter((r) => Number.isFinite(r.p99));
  const health = rows.find((c) => c[1].startsWith('GET /health'));
  if (api.length === 0) return null;
  const worst = api.reduce((a, b) => (b.p99 > a.p99 ? b : a));
  const layout = /layout (\w+)/.exec(text)?.[1] ?? 'spread';
  return { file: `bench/results/${file}`, rows: rowsOf(file), worst, health: health ? Number(health[4]) : NaN, count: api.length, layout };
}

/** The reads quiet and under load, one row each. */
function loadedReadsTable(u) {
  const head = ['read (embedded store of this run)', 'quiet p50 ms', 'quiet p99 ms', `under load (c=${u.concurrency}) p50 ms`, 'p99 ms'];
  const rows = u.reads.map((r) => [`GET ${r.path}`, r.quiet.p50.toFixed(1), r.quiet.p99.toFixed(1), r.loaded.p50.toFixed(1), r.loaded.p99.toFixed(1)]);
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  return [`Reads under proxy load (${u.seconds} s each, a read every 100 ms; ${u.proxied} requests proxied meanwhile, errors ${u.errors}):`, line(head), `|${width.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}

/**
 * A proxy's rate is bound by its main thread (the event loop), which stays short of a whole core: req/s = busy share /
 * main-thread CPU a request. So the target ratio, at the main-thread shares of this run, asks Tollgate's main thread
 * for at most passthrough µs x (Tollgate's share / the passthrough's) / target a request: its budget, beside the
 * floor's figure.
 */
function mainThreadBudget(tg, pt, fl, target) {
  const budget = (pt.mainPerReq * tg.mainBusy) / (pt.mainBusy * target);
  const floor = fl ? `, the floor ${Math.round(fl.mainPerReq)} µs` : '';
  return [
    `  its main thread a request (the rate's bound: Tollgate's ${Math.round(tg.mainBusy * 100)}% busy, the machine ${tg.machineBusy.toFixed(2)} CPUs)`,
    `${Math.round(tg.mainPerReq)} µs${floor}`,
    `bare passthrough ${Math.round(pt.mainPerReq)} µs (${Math.round(pt.mainBusy * 100)}% busy)`,
    `<= ${Math.round(budget)} µs for ${Math.round(target * 100)}%`,
    tg.mainPerReq <= budget ? 'yes' : 'NO',
  ];
}

const rowsLabel = (n) => (!Number.isFinite(n) ? 'n/a' : n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : String(n));

/** Issue 17's figures in one table: each beside its baseline from this run (or the named run) and its target. */
function summaryTable({ results, peak, startup, idle, reads, underLoad }) {
  const pct = (x) => `${Math.round(x * 100)}%`;
  const mib = (x) => (x === undefined || !Number.isFinite(x) ? 'n/a' : `${Math.round(x)} MiB`);
  const rows = [];
  for (const sc of SCENARIOS) {
    const tg = results.find((r) => r.scenario.key === sc.key && r.target === 'tollgate');
    const pt = results.find((r) => r.scenario.key === sc.key && r.target === 'passthrough');
    const ratio = tg && pt && pt.rps > 0 ? tg.rps / pt.rps : NaN;
    const target = TARGETS_17[sc.key];
    rows.push([`throughput, ${sc.label} x${sc.concurrency}, recording on`, `${pct(ratio)} (${Math.round(tg?.rps ?? 0)} req/s)`, `bare passthrough ${Math.round(pt?.rps ?? 0)} req/s`, `>= ${pct(target)}`, ratio >= target ? 'yes' : 'NO']);
    const fl = results.find((r) => r.scenario.key === sc.key && r.target === 'floor');
    if (fl && tg) {
      const rf = pt && pt.rps > 0 ? fl.rps / pt.rps : NaN;
      rows.push([`  the recording floor (bench/floor.mjs: the passthrough plus the record's own work, embedded store)`, `${(rf * 100).toFixed(1)}% (${Math.round(fl.rps)} req/s); Tollgate at ${pct(tg.rps / fl.rps)} of it`, `bare passthrough ${Math.round(pt?.rps ?? 0)} req/s`, `>= ${pct(target)}`, rf >= target ? 'floor above it' : 'floor below it']);
    }
    if (tg && pt) rows.push(mainThreadBudget(tg, pt, fl, target));
    const variants = [
      ['tollgate-server', 'server path (ClickHouse in another process)'],
      ['tollgate-spans', 'spans exported over OTLP/HTTP (row, metrics and span)'],
    ];
    for (const [name, label] of variants) {
      const v = results.find((r) => r.scenario.key === sc.key && r.target === name);
      if (!v) continue;
      const rv = pt && pt.rps > 0 ? v.rps / pt.rps : NaN;
      rows.push([`  the same, ${label}`, `${pct(rv)} (${Math.round(v.rps)} req/s)`, `bare passthrough ${Math.round(pt?.rps ?? 0)} req/s`, `>= ${pct(target)}`, rv >= target ? 'yes' : 'NO']);
    }
  }
  if (startup) {
    const s = startup;
    rows.push(['start to first proxied 200 (fresh data dir, embedded)', `${Math.round(s.tollgate)} ms (/ready ${Math.round(s.tollgateReady)} ms)`, `bare passthrough ${Math.round(s.passthrough)} ms`, `<= ${TARGETS_17.startMs} ms`, s.tollgate <= TARGETS_17.startMs ? 'yes' : 'NO']);
  }
  if (idle) {
    // Judged on the settled figure (an idle process as an operator sees it); the one a few seconds after the load beside it.
    const both = (k) => `${mib(idle[`${k}@settled`])} (${IDLE_S} s: ${mib(idle[k])})`;
    const bare = `node ${both('node')}; node + chdb session ${both('node+chdb')}; bare passthrough ${both('passthrough')}`;
    const idleLabel = `after ${SETTLE_S} s idle (${IDLE_S} s)`;
    const emb = idle['tollgate-embedded@settled'];
    const srv = idle['tollgate-server@settled'];
    rows.push([`idle RSS, embedded store (process tree), ${idleLabel}`, both('tollgate-embedded'), bare, `<= ${TARGETS_17.idleEmbeddedMiB} MiB`, emb <= TARGETS_17.idleEmbeddedMiB ? 'yes' : 'NO']);
    rows.push([`idle RSS, server path (engine ${idle['tollgate-server-engine'] ? 'LOADED' : 'not loaded'}), ${idleLabel}`, both('tollgate-server'), `bare passthrough ${both('passthrough')}`, `<= ${TARGETS_17.idleServerMiB} MiB`, srv <= TARGETS_17.idleServerMiB && !idle['tollgate-server-engine'] ? 'yes' : 'NO']);
    // The same processes after a burst at c=32 and the same wait: what a gateway holds once a busy spell is over.
    const burstLabel = `after ${BURST_REQUESTS} requests at c=${CONCURRENCY}, then ${SETTLE_S} s idle`;
    const embB = idle['tollgate-embedded@burst'];
    const srvB = idle['tollgate-server@burst'];
    rows.push([`  idle RSS, embedded store, ${burstLabel}`, mib(embB), `bare passthrough ${mib(idle['passthrough@burst'])}`, `<= ${TARGETS_17.idleEmbeddedMiB} MiB`, embB <= TARGETS_17.idleEmbeddedMiB ? 'yes' : 'NO']);
    rows.push([`  idle RSS, server path, ${burstLabel}`, mib(srvB), `bare passthrough ${mib(idle['passthrough@burst'])}`, `<= ${TARGETS_17.idleServerMiB} MiB`, srvB <= TARGETS_17.idleServerMiB ? 'yes' : 'NO']);
  }
  if (underLoad) {
    const worst = (k) => underLoad.reads.reduce((a, b) => (b[k].p99 > a[k].p99 ? b : a));
    const w = worst('loaded');
    const q = worst('quiet');
    rows.push([`read p99 under proxy load (c=${underLoad.concurrency}, embedded, this run's rows), worst of ${underLoad.reads.length}`, `${w.loaded.p99.toFixed(1)} ms (${w.path})`, `quiet ${q.quiet.p99.toFixed(1)} ms (${q.path})`, 'documented', '']);
  }
  if (peak) {
    rows.push([`peak RSS over the run (c=${CONCURRENCY}, embedded)`, mib(peak.tollgate), `bare passthrough ${mib(peak.passthrough)}`, 'bounded (documented)', '']);
    rows.push([`peak RSS over the run (c=${CONCURRENCY}, server path; its ClickHouse server not counted)`, mib(peak.server), `bare passthrough ${mib(peak.passthrough)}`, 'bounded (documented)', '']);
  }
  rows.push(reads
    ? [`read p99, worst of ${reads.count} /api reads at ${rowsLabel(reads.rows)} rows (bench:queries, layout ${reads.layout})`, `${reads.worst.p99.toFixed(1)} ms (${reads.worst.label.replace(/^GET /, '')})`, `/health ${reads.health} ms; ${reads.file}`, `< ${TARGETS_17.readP99Ms} ms`, reads.worst.p99 < TARGETS_17.readP99Ms ? 'yes' : 'NO']
    : ['read p99 at 10M rows', 'not measured here: run npm run bench:queries', '', `< ${TARGETS_17.readP99Ms} ms`, '']);
  const head = ['figure', 'tollgate', 'baseline (same run)', 'target', 'met'];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => c.padEnd(width[i])).join(' | ')} |`;
  return ['Issue 17 figures:', line(head), `|${width.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

async function main() {
  if (!existsSync(join(ROOT, 'dist', 'app.js'))) throw new Error('dist/app.js is missing: run `npm run build` (npm run bench does)');
  const cpu = cpus();
  log(
    `node ${process.version}, ${cpu.length} CPUs (${cpu[0]?.model ?? 'unknown'}), load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
  );

  const children = [];
  const results = [];
  let memDir = null;
  let floorDir = null;
  let floorRows = null;
  let serverDir = null;
  let spansDir = null;
  let spans = null;
  let clickhouse = null;
  let clickhouseDir = null;
  let recordingServer = null;
  let recording = null;
  let peak = null;
  let threads = null;
  let startup = null;
  let idle = null;
  let underLoad = null;
  const problems = [];
  try {
    const upstream = await start('upstream');
    children.push(upstream);
    const passthrough = await start('passthrough', [upstream.url]);
    children.push(passthrough);
    floorDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-floor-'));
    const floor = await start('floor', [upstream.url, floorDir]);
    children.push(floor);
    const dataDir = guard.dataDir('tollgate-bench-');
    const tollgate = await start('tollgate', [upstream.url, dataDir]);
    children.push(tollgate);
    // Its own directory (the process removes it when it exits; so does the finally below).
    memDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-mem-'));
    const memspool = await start('tollgate', [upstream.url, memDir, 'memory-spool']);
    children.push(memspool);
    clickhouseDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-ch-'));
    clickhouse = await startClickHouseServer(ROOT, clickhouseDir);
    log(`ClickHouse test server at ${clickhouse.url} (pid ${clickhouse.pid})`);
    serverDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-srv-'));
    const onServer = await start('tollgate', [upstream.url, serverDir, 'server', clickhouse.url]);
    children.push(onServer);
    const servers = { direct: upstream, passthrough, floor, tollgate, 'tollgate-memspool': memspool, 'tollgate-server': { ...onServer, extraPid: clickhouse.pid } };
    let sink = null;
    if (SPANS) {
      sink = await start('otlp-sink');
      children.push(sink);
      spansDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-spans-'));
      servers['tollgate-spans'] = await start('tollgate', [upstream.url, spansDir, 'spans', sink.url]);
      children.push(servers['tollgate-spans']);
    }

    const ticks0 = threadTicks(tollgate.child.pid);
    for (const scenario of SCENARIOS) results.push(...(await runScenario(scenario, servers)));
    threads = tickShares(ticks0, threadTicks(tollgate.child.pid));
    // Reads quiet and under load on the embedded target; its requests are counted with the rows below.
    if (LOADED_READS_S > 0) underLoad = await measureReadsUnderLoad({ url: tollgate.url, seconds: LOADED_READS_S, concurrency: 16, log });
    const loadSent = underLoad === null ? 0 : underLoad.proxied + underLoad.errors;
    if (underLoad !== null && underLoad.errors > 0) problems.push(`${underLoad.errors} requests failed during the reads under load`);

    for (const s of children) if (s.child.crashed) problems.push(`${s.child.name} crashed during the run`);
    const mine = results.filter((r) => r.target === 'tollgate');
    try {
      const c = await tollgate.child.request('count', undefined, 120_000);
      recording = {
        ...c,
        sent: mine.reduce((s, r) => s + r.issued, 0) + loadSent,
        sentStreamed: mine.filter((r) => r.scenario.stream).reduce((s, r) => s + r.issued, 0),
      };
    } catch (err) {
      problems.push(`could not count Tollgate's rows: ${err.message}`);
    }
    const floorResults = results.filter((r) => r.target === 'floor');
    try {
      const c = await floor.child.request('count', undefined, 120_000);
      floorRows = { ...c, sent: floorResults.reduce((s, r) => s + r.issued, 0) };
    } catch (err) {
      problems.push(`could not count the floor's rows: ${err.message}`);
    }
    const onServerResults = results.filter((r) => r.target === 'tollgate-server');
    try {
      const c = await onServer.child.request('count', undefined, 120_000);
      recordingServer = { ...c, sent: onServerResults.reduce((s, r) => s + r.issued, 0) };
    } catch (err) {
      problems.push(`could not count the server path's rows: ${err.message}`);
    }
    if (sink !== null) {
      // Its rows as every target's, then its spans: the SDK's shutdown exports what is still queued.
      const sent = results.filter((r) => r.target === 'tollgate-spans').reduce((n, r) => n + r.issued, 0);
      try {
        const target = servers['tollgate-spans'].child;
        const rows = await target.request('count', undefined, 120_000);
        const counted = await target.request('flushSpans', undefined, 60_000);
        spans = { sent, rows: rows.rows, dropped: rows.dropped, counted, ...(await sink.child.request('count')) };
      } catch (err) {
        problems.push(`could not count the spans target's rows and spans: ${err.message}`);
      }
    }
    const upstats = await upstream.child.request('stats').catch(() => null);
    if (upstats) log(`upstream answered ${upstats.served} requests (${upstats.badRequests} bad)`);
    // Peak RSS over the whole run (load at c=32 included), before the processes stop.
    peak = { tollgate: treeMiB(tollgate.child.pid, 'VmHWM'), server: treeMiB(onServer.child.pid, 'VmHWM'), passthrough: treeMiB(passthrough.child.pid, 'VmHWM') };
    if (FOOTPRINT) {
      // The start and the idle footprint are measured with only the fake upstream running: the load targets stop
      // first. Left running, their embedded engines' merges of the run's rows, their evaluators and the ClickHouse
      // server share the two cores with each start (two short runs each way, alternated: medians of 477 and 470 ms
      // beside them, 442 and 423 without; docs/benchmarks.md).
      const loadTargets = children.filter((c) => c !== upstream);
      await Promise.all(loadTargets.map((c) => c.child.stop().catch(() => undefined)));
      if (clickhouse !== null) await clickhouse.stop();
      startup = await measureStart({ root: ROOT, upstream: upstream.url, rounds: START_ROUNDS, log });
      idle = await measureFootprint({ root: ROOT, upstream: upstream.url, idleS: IDLE_S, settleS: SETTLE_S, requests: 200, burst: { requests: BURST_REQUESTS, concurrency: CONCURRENCY }, log });
    }
  } finally {
    await Promise.all(children.map((c) => c.child.stop().catch(() => undefined)));
    killAll();
    guard.removeDataDir();
    if (memDir !== null) rmSync(memDir, { recursive: true, force: true });
    if (floorDir !== null) rmSync(floorDir, { recursive: true, force: true });
    if (serverDir !== null) rmSync(serverDir, { recursive: true, force: true });
    if (spansDir !== null) rmSync(spansDir, { recursive: true, force: true });
    if (clickhouse !== null) await clickhouse.stop();
    if (clickhouseDir !== null) rmSync(clickhouseDir, { recursive: true, force: true });
  }

  // ---- report ----
  const out = [];
  out.push('');
  out.push(
    `Tollgate benchmark: node ${process.version}, ${cpus().length} CPUs; per row ${WARMUP_S} s warm-up, then ${DURATION_S} s measured ` +
      `in ${SLICES} slice(s) interleaved with the other targets; closed loop over keep-alive connections.`,
  );
  out.push('"vs passthrough": req/s relative to the bare Fastify + undici proxy in the same scenario. "server CPU": CPU time');
  out.push("of the process under test (all its threads) per request, during its own slices (for tollgate-server, plus its ClickHouse server's).");
  out.push('');
  out.push(table(results));
  out.push('');

  const errors = results.reduce((s, r) => s + r.errors, 0);
  if (errors > 0) problems.push(`${errors} requests failed (see the error lines above)`);
  const rowsOk =
    recording !== null &&
    recording.rows === recording.sent &&
    recording.streamed === recording.sentStreamed &&
    recording.dropped === 0;
  if (recording) {
    out.push(
      `Rows recorded: ${recording.rows} rows in tollgate.requests FINAL for ${recording.sent} requests sent to Tollgate ` +
        `(warm-up included; streamed ${recording.streamed}/${recording.sentStreamed}; status success ${recording.success}; ` +
        `dropped ${recording.dropped}) -> ${rowsOk ? 'every request recorded' : 'ROWS MISSING OR EXTRA'}`,
    );
    const ins = recording.inserts;
    const between = results
      .filter((r) => r.target === 'tollgate')
      .map((r) => `${r.scenario.label} ${Math.round(r.cpuBetweenPerReq)}`)
      .join(', ');
    out.push(
      `Tollgate storage: ${ins.calls} inserts, ${(ins.rows / Math.max(1, ins.calls)).toFixed(0)} rows/insert on average, ` +
        `${(ins.ms / Math.max(1, ins.calls)).toFixed(1)} ms/insert; CPU burnt between its own slices (µs per measured request): ${between}`,
    );
    if (!rowsOk) problems.push(`rows recorded ${recording.rows} != requests sent ${recording.sent} (or rows dropped)`);
    if (recordingServer) {
      const ok = recordingServer.rows === recordingServer.sent && recordingServer.dropped === 0;
      out.push(
        `Server path: ${recordingServer.rows} rows in the ClickHouse server for ${recordingServer.sent} requests sent (dropped ${recordingServer.dropped}); ` +
          `${recordingServer.inserts.calls} inserts -> ${ok ? 'every request recorded' : 'ROWS MISSING OR EXTRA'}`,
      );
      if (!ok) problems.push(`server path: rows recorded ${recordingServer.rows} != requests sent ${recordingServer.sent} (or rows dropped)`);
    }
  } else {
    out.push('Rows recorded: NOT CHECKED');
  }
  if (floorRows && !floorRows.checked) {
    out.push(`Floor: ${floorRows.rows} rows in its store for ${floorRows.sent} requests sent -> not checked (FLOOR_STORE=0 or FLOOR_RECORD=0)`);
  } else if (floorRows) {
    const ok = floorRows.rows === floorRows.sent;
    out.push(`Floor: ${floorRows.rows} rows in its store for ${floorRows.sent} requests sent -> ${ok ? 'every request recorded' : 'ROWS MISSING OR EXTRA'}`);
    if (!ok) problems.push(`floor: rows recorded ${floorRows.rows} != requests sent ${floorRows.sent}`);
  }

  if (spans) {
    // Every request sent to the spans target: its row, its SERVER span and its upstream call's CLIENT span.
    const server = spans.byKind.server ?? 0;
    const client = spans.byKind.client ?? 0;
    // And the gateway's own account of them (tollgate_spans_total on its /metrics): what the receiver got, none lost.
    const c = spans.counted;
    const agrees = c.exported === spans.spans && c.failed === 0 && c.dropped === 0 && c.queued === 0;
    const ok = spans.rows === spans.sent && spans.dropped === 0 && server === spans.sent && client === spans.sent && spans.unreadable === 0 && agrees;
    out.push(
      `Spans: ${spans.spans} spans received over OTLP/HTTP for ${spans.sent} requests sent to tollgate-spans (SERVER ${server}, CLIENT ${client}; ` +
        `${spans.posts} posts, ${(spans.bytes / 1e6).toFixed(1)} MB), its rows ${spans.rows} (dropped ${spans.dropped}); its /metrics: ` +
        `${c.exported} exported, ${c.failed} failed, ${c.dropped} dropped, ${c.queued} queued -> ` +
        `${ok ? "every request's row and spans recorded, as the gateway counts them" : 'SPANS OR ROWS MISSING OR EXTRA'}`,
    );
    if (!ok) problems.push(`spans target: ${server} SERVER and ${client} CLIENT spans, ${spans.rows} rows, for ${spans.sent} requests sent; the gateway counted ${c.exported} exported, ${c.failed} failed, ${c.dropped} dropped, ${c.queued} queued`);
  } else if (SPANS) {
    out.push('Spans: NOT CHECKED');
  }

  for (const sc of SCENARIOS) {
    const withSpans = results.find((r) => r.scenario.key === sc.key && r.target === 'tollgate-spans');
    const plain = results.find((r) => r.scenario.key === sc.key && r.target === 'tollgate');
    if (withSpans && plain && plain.rps > 0) {
      out.push(
        `Span cost, ${sc.label}: Tollgate exporting its spans at ${((withSpans.rps / plain.rps) * 100).toFixed(1)}% of the same Tollgate ` +
          `without an OTLP endpoint (CPU ${Math.round(withSpans.cpuPerReq)} vs ${Math.round(plain.cpuPerReq)} µs/req)`,
      );
    }
    const disk = results.find((r) => r.scenario.key === sc.key && r.target === 'tollgate');
    const mem = results.find((r) => r.scenario.key === sc.key && r.target === 'tollgate-memspool');
    if (disk && mem && mem.rps > 0) {
      out.push(
        `Spool cost, ${sc.label}: Tollgate with the disk spool at ${((disk.rps / mem.rps) * 100).toFixed(1)}% of the same Tollgate with ` +
          `its spool in memory (CPU ${Math.round(disk.cpuPerReq)} vs ${Math.round(mem.cpuPerReq)} µs/req)`,
      );
    }
  }

  const tg = results.find((r) => r.scenario.key === 'json' && r.target === 'tollgate');
  const pt = results.find((r) => r.scenario.key === 'json' && r.target === 'passthrough');
  const ratio = tg && pt && pt.rps > 0 ? tg.rps / pt.rps : 0;
  const ratioOk = ratio >= ACCEPT_RATIO;
  const accepted = ratioOk && tg?.errors === 0 && rowsOk;
  out.push(
    `Acceptance (Tollgate with recording >= ${ACCEPT_RATIO * 100}% of the bare passthrough's req/s at ${CONCURRENCY} concurrent ` +
      `non-streaming requests, zero errors, every request recorded): ${accepted ? 'MET' : 'NOT MET'} -- ` +
      `ratio ${(ratio * 100).toFixed(1)}% (${ratioOk ? 'ok' : `BELOW ${ACCEPT_RATIO * 100}%`}), ` +
      `errors ${tg?.errors ?? 'n/a'}, rows ${rowsOk ? 'all recorded' : recording ? 'MISSING' : 'NOT CHECKED'}`,
  );
  if (threads !== null && threads.length > 0) {
    out.push(
      `Tollgate's CPU by thread over the run (the engine's threads are ClickHouse's): ` +
        threads.slice(0, 8).map((x) => `${x.name} ${(x.share * 100).toFixed(1)}%`).join(', '),
    );
  }
  out.push('');
  if (underLoad !== null) out.push(loadedReadsTable(underLoad), '');
  out.push(summaryTable({ results, peak, startup, idle, reads: latestQueries(), underLoad }));
  if (CPU_PROF) out.push(`CPU profiles: ${PROFILE_DIR} (summarise with: node bench/profile-summary.mjs <file>)`);
  if (problems.length > 0) out.push(`RUN FAILED: ${problems.join('; ')}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return problems.length === 0 ? 0 : 1;
}

runMain(main, { log, cleanup: guard.cleanup });
