// Start and footprint (issue 17), measured from outside each process as an operator sees it:
//
// - start to first proxied 200: from spawn until the first POST /v1/chat/completions through the process answers
//   200 (polled every 5 ms on a fixed port), for Tollgate (the built CLI, dist/main.js, on a fresh data directory,
//   embedded store) and for the bare Fastify + undici passthrough (bench/passthrough.mjs), interleaved, N rounds;
//   Tollgate's time until /ready says 200 (its store opened and migrated in the background) beside it;
// - idle RSS (VmRSS of the process and every process it started, from /proc): after start, 200 proxied requests and
//   a few seconds idle, and again once V8 has shrunk the heap that grew under load (about half a minute idle), for Tollgate embedded, Tollgate on the server path (storage.clickhouse_url, a ClickHouse
//   server in another process, not counted), the bare passthrough, a bare Node process, and a bare Node process
//   with a chdb session open (bench/lib/chdb-idle.mjs): what the engine costs by itself;
// - idle RSS after a busy spell: then each of the three servers takes a burst of requests at c=32 (V8's young
//   generation grows to its maximum, which 200 requests one at a time do not make it do) and is sampled the same
//   half minute after it: what a gateway holds once the load is over (docs/benchmarks.md, "Idle after a busy spell").
//
// The ClickHouse server of the server path is the test server of test/helpers/clickhouse-http.ts (ClickHouse's HTTP
// interface over one embedded engine, in its own process): no ClickHouse server that can run the schema installs on
// this machine (docs/benchmarks.md says why). The gateway's side (HTTP client, no engine) is what is measured.

import { fork, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { REQUEST_BODY, UPSTREAM_MODEL } from './payloads.mjs';
import { median } from './stats.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** VmRSS (or VmHWM) of `pid` and all its descendants, in MiB. */
export function treeMiB(pid, field = 'VmRSS') {
  let kib = 0;
  const visit = (p) => {
    try {
      const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      kib += m ? Number(m[1]) : 0;
      for (const task of readdirSync(`/proc/${p}/task`)) {
        const kids = readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim();
        for (const k of kids ? kids.split(/\s+/) : []) visit(k);
      }
    } catch {
      // gone
    }
  };
  visit(pid);
  return kib / 1024;
}

async function freePort() {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function post(url) {
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: REQUEST_BODY });
  await res.body.text();
  return res.statusCode;
}

/** `n` requests to `url`, `concurrency` at a time; any that fails fails the run. */
async function bounded(url, n, concurrency, name) {
  let left = n;
  const worker = async () => {
    while (left-- > 0) if ((await post(url)) !== 200) throw new Error(`${name}: a request failed`);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Poll until `probe` is true; the ms from `t0`. */
async function until(t0, probe, limitMs = 60_000) {
  for (;;) {
    try {
      if (await probe()) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > limitMs) throw new Error(`not up within ${limitMs} ms`);
    await sleep(5);
  }
}

function tollgateConfig(dir, port, upstream, clickhouseUrl = '') {
  const file = join(dir, 'config.yaml');
  // BENCH_IDLE_GC_S: the gateways' server.idle_gc_s (unset: the shipped default; 0: no collection when quiet).
  const idleGc = process.env.BENCH_IDLE_GC_S === undefined ? '' : `, idle_gc_s: ${Number(process.env.BENCH_IDLE_GC_S)}`;
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port}${idleGc} }
storage:
  data_dir: ${JSON.stringify(join(dir, 'data'))}
  clickhouse_url: ${JSON.stringify(clickhouseUrl)}
providers:
  bench:
    name: Bench upstream
    group: paid
    format: openai
    base_url: ${upstream}/v1
    auth: { type: api_key, key: sk-bench-upstream }
    price: { input: 0.15, output: 0.6, cached: 0.075 }
    models: { ${UPSTREAM_MODEL}: { kind: llm } }
`);
  return file;
}

/** A process, killed (and waited for) by `stop`. */
function track(child) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

function spawnTollgate(root, file, dir) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_') || ['PORT', 'TOLLGATE_CONFIG', 'NODE_OPTIONS'].includes(k)) delete env[k];
  return track(spawn(process.execPath, [join(root, 'dist', 'main.js'), '--config', file], { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] }));
}

/** Start to first proxied 200, Tollgate (and its /ready) vs the bare passthrough, interleaved; medians and all runs. */
export async function measureStart({ root, upstream, rounds, log }) {
  const runs = { tollgate: [], tollgateReady: [], passthrough: [] };
  log(`start rounds: load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (let i = 0; i < rounds; i++) {
    for (const target of i % 2 === 0 ? ['tollgate', 'passthrough'] : ['passthrough', 'tollgate']) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      if (target === 'tollgate') {
        const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-start-'));
        const file = tollgateConfig(dir, port, upstream);
        const t0 = performance.now();
        const p = spawnTollgate(root, file, dir);
        try {
          runs.tollgate.push(await until(t0, async () => (await post(url)) === 200));
          runs.tollgateReady.push(await until(t0, async () => (await request(`${url}/ready`)).statusCode === 200));
        } finally {
          await p.stop();
          rmSync(dir, { recursive: true, force: true });
        }
      } else {
        const t0 = performance.now();
        const p = track(fork(join(root, 'bench', 'passthrough.mjs'), [upstream, String(port)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
        try {
          runs.passthrough.push(await until(t0, async () => (await post(url)) === 200));
        } finally {
          await p.stop();
        }
      }
    }
    log(`start round ${i + 1}/${rounds}: tollgate ${runs.tollgate.at(-1).toFixed(0)} ms (ready ${runs.tollgateReady.at(-1).toFixed(0)} ms), passthrough ${runs.passthrough.at(-1).toFixed(0)} ms`);
  }
  return { tollgate: median(runs.tollgate), tollgateReady: median(runs.tollgateReady), passthrough: median(runs.passthrough), runs };
}

/** The test ClickHouse server (ClickHouse's HTTP interface over its own embedded engine) in a child process. */
export async function startClickHouseServer(root, dataDir) {
  const child = fork(join(root, 'test', 'helpers', 'clickhouse-http-main.ts'), [JSON.stringify({ dataDir })], {
    execArgv: [`--import=${import.meta.resolve('@tapjs/typescript/import')}`],
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the ClickHouse test server did not start within 60 s')), 60_000);
    child.on('message', (m) => {
      if (m?.ready) {
        clearTimeout(timer);
        resolve(m.port);
      }
    });
    child.once('exit', () => reject(new Error('the ClickHouse test server exited')));
  });
  return { url: `http://127.0.0.1:${port}`, ...track(child) };
}

/**
 * Idle RSS of each process after start and `requests` proxied requests: `idleS` seconds after its last request, and
 * again `settleS` seconds after it (V8 shrinks a heap that grew under load only once the process has been idle for
 * several seconds, its memory reducer; the first figure can catch it before that). The processes are started and
 * driven one after the other and then idle side by side, each sampled on its own clock, so the longer wait costs the
 * run `settleS` once, not once per process.
 */
export async function measureFootprint({ root, upstream, idleS, settleS, requests, burst = null, log }) {
  const out = {};
  const samples = [];
  const stops = [];
  const settle = async (name, pid, url) => {
    if (url) for (let i = 0; i < requests; i++) if ((await post(url)) !== 200) throw new Error(`${name}: a request failed`);
    const t0 = performance.now();
    const at = async (s, key, from = t0) => {
      await sleep(Math.max(0, from + s * 1000 - performance.now()));
      out[key] = treeMiB(pid);
      log(`idle RSS ${key} (${s} s idle): ${out[key].toFixed(0)} MiB`);
    };
    // Then a burst (`burst.requests` at `burst.concurrency`, as under load: V8's young generation grows to its
    // maximum) and the same wait: what a gateway holds once a busy spell is over.
    const afterBurst = async () => {
      await bounded(url, burst.requests, burst.concurrency, name);
      await at(settleS, `${name}@burst`, performance.now());
    };
    samples.push(at(idleS, name), at(settleS, `${name}@settled`).then(() => (url && burst ? afterBurst() : undefined)));
  };
  try {
    const bare = track(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
    stops.push(bare.stop);
    await settle('node', bare.pid, null);
    const chdbDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-chdb-'));
    const chdb = track(fork(join(root, 'bench', 'lib', 'chdb-idle.mjs'), [chdbDir], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
    stops.push(async () => {
      await chdb.stop();
      rmSync(chdbDir, { recursive: true, force: true });
    });
    await until(performance.now(), () => readFileSync(join(chdbDir, 'ready'), 'utf8') === 'ok', 60_000);
    await settle('node+chdb', chdb.pid, null);
    {
      const port = await freePort();
      const p = track(fork(join(root, 'bench', 'passthrough.mjs'), [upstream, String(port)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
      stops.push(p.stop);
      await until(performance.now(), async () => (await post(`http://127.0.0.1:${port}`)) === 200);
      await settle('passthrough', p.pid, `http://127.0.0.1:${port}`);
    }
    for (const path of ['embedded', 'server']) {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-idle-'));
      const ch = path === 'server' ? await startClickHouseServer(root, join(dir, 'ch')) : null;
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const p = spawnTollgate(root, tollgateConfig(dir, port, upstream, ch?.url ?? ''), dir);
      stops.push(async () => {
        await p.stop();
        await ch?.stop();
        rmSync(dir, { recursive: true, force: true });
      });
      await until(performance.now(), async () => (await request(`${url}/ready`)).statusCode === 200);
      await settle(`tollgate-${path}`, p.pid, url);
      out[`tollgate-${path}-engine`] = readFileSync(`/proc/${p.pid}/maps`, 'utf8').includes('libchdb');
    }
    await Promise.all(samples);
  } finally {
    await Promise.allSettled(samples);
    for (const stop of stops.reverse()) await stop();
  }
  return out;
}

/**
 * CPU ticks (user + system) of each thread of `pid`, summed by thread name (digits dropped): where a process's CPU
 * goes between the request path (the `node` main thread), libuv's pool, V8's helpers and the embedded engine's
 * threads (their names are ClickHouse's: query pipeline, merges, background schedule pool...).
 */
export function threadTicks(pid) {
  const out = new Map();
  let tasks = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[\d]+$/, '').replace(/[-_:]+$/, '') || '?';
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** The share of CPU per thread name between two `threadTicks` samples, largest first (threads that ended are lost). */
export function tickShares(before, after) {
  const diff = [...after].map(([name, t]) => [name, t - (before.get(name) ?? 0)]).filter(([, d]) => d > 0);
  const total = diff.reduce((s, [, d]) => s + d, 0);
  return diff.sort((a, b) => b[1] - a[1]).map(([name, d]) => ({ name, share: d / total }));
}

/** CPU time (user + system, all threads) of process `pid` in µs, from /proc (10 ms resolution); NaN when it is gone. */
export function procCpuMicros(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * (1e6 / 100);
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) of `pid`'s main thread in µs, from /proc (10 ms resolution); NaN when it is gone. */
export function mainThreadMicros(pid) {
  return procCpuMicros(`${pid}/task/${pid}`);
}

/** The machine's CPU ticks since boot, all CPUs: busy (everything but idle and iowait) and in all. */
export function machineTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3] - f[4], total };
}
