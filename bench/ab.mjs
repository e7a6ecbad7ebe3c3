// Two builds (or one build under two settings) measured at the same time: each under its own closed loop of half the
// concurrency, from this one process, against one fake upstream, over the same windows. On a shared machine whose
// speed moves by up to 2x within minutes (docs/benchmarks.md), one build measured after another cannot show a
// difference of a few per cent; two measured at once are hit by the same drift, so their ratio can.
//
//   npm run build && node bench/ab.mjs
//
// Each side is a directory holding a built copy (`dist/`, `bench/`, and `node_modules/` reachable from it), by default
// this checkout for both: to compare against another commit, `git worktree add /tmp/base <rev>`, link this checkout's
// node_modules into it, build it there, and give it as AB_DIR_A. Knobs:
//
//   AB_DIR_A, AB_DIR_B     the two copies (default: this checkout)
//   AB_ENV_A, AB_ENV_B     environment of that side's process, `K=V,K2=V2` (e.g. AB_ENV_B=BENCH_NO_RECORD=marker)
//   AB_ARGS_A, AB_ARGS_B   node flags of that side's process (e.g. AB_ARGS_B=--max-semi-space-size=64)
//   AB_TARGET              the bench target both sides run: tollgate (default), floor, passthrough
//   AB_TARGET_A, AB_TARGET_B  one side's target (e.g. AB_TARGET_A=passthrough: Tollgate's CPU against the bare proxy's)
//   AB_SCENARIO            json (default) or sse
//   AB_ROUNDS, AB_SECONDS  measured windows and their length (10 x 5 s), after a 3 s warm-up
//   AB_CONCURRENCY         both sides together (32)
//   AB_THREADS             1: after the rounds, each side's CPU by thread name over two more windows
//   AB_ORDERS              2: a second pass with B's process started first, and B/A over both passes
//
// Prints each window's figures and the medians of B/A: CPU a request (all threads; main thread) and requests served.
// The same build on both sides gave medians within 5 % of 1 in seven runs, the side started second serving about 2 %
// less: run both orders (swap the sides) and average them, and read a difference under about 4 % in one order as none.

import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild, killAll } from './lib/ipc.mjs';
import { Load } from './lib/load.mjs';
import { REQUEST_BODY, STREAM_REQUEST_BODY } from './lib/payloads.mjs';
import { median } from './lib/stats.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const env = process.env;
const target = env.AB_TARGET ?? 'tollgate';
const targets = { A: env.AB_TARGET_A ?? target, B: env.AB_TARGET_B ?? target };
for (const t of Object.values(targets)) {
  if (!['tollgate', 'floor', 'passthrough'].includes(t)) throw new Error(`AB_TARGET: '${t}' is not tollgate, floor or passthrough`);
}
const scenario = env.AB_SCENARIO ?? 'json';
if (!['json', 'sse'].includes(scenario)) throw new Error(`AB_SCENARIO: '${scenario}' is not json or sse`);
const rounds = Number(env.AB_ROUNDS ?? 10);
const seconds = Number(env.AB_SECONDS ?? 5);
const concurrency = Number(env.AB_CONCURRENCY ?? 32);

/** `K=V,K2=V2` as pairs. */
const pairs = (text) => (text ?? '').split(',').filter(Boolean).map((kv) => {
  const i = kv.indexOf('=');
  if (i < 1) throw new Error(`'${kv}' is not K=V`);
  return [kv.slice(0, i), kv.slice(i + 1)];
});

/** CPU time (µs) in a /proc stat line, of a process (all its threads) or of one thread: utime + stime, 10 ms ticks. */
function statMicros(stat) {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}
const cpuMicros = (path) => statMicros(readFileSync(path, 'utf8'));

/** CPU time (µs) by thread name, the main thread apart. */
function byThread(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // a thread that ended meanwhile
    }
    const name = (tid === String(pid) ? 'main: ' : '') + stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    out.set(name, (out.get(name) ?? 0) + statMicros(stat));
  }
  return out;
}

const upstream = startChild('upstream', join(HERE, 'upstream.mjs'));
const up = await upstream.ready;

async function side(label) {
  const dir = resolve(env[`AB_DIR_${label}`] ?? join(HERE, '..'));
  const data = mkdtempSync(join(tmpdir(), `tollgate-ab-${label}-`));
  const vars = pairs(env[`AB_ENV_${label}`]);
  const saved = vars.map(([k]) => [k, env[k]]);
  for (const [k, v] of vars) env[k] = v; // the child gets this process's environment at its start
  const kind = targets[label];
  const child = startChild(label, join(dir, 'bench', `${kind}.mjs`), kind === 'passthrough' ? [up.url] : [up.url, data], {
    execArgv: (env[`AB_ARGS_${label}`] ?? '').split(' ').filter(Boolean), cwd: tmpdir(),
  });
  const info = await child.ready.finally(() => {
    for (const [k, v] of saved) if (v === undefined) delete env[k]; else env[k] = v;
  });
  const load = new Load({
    origin: info.url, path: '/v1/chat/completions', body: scenario === 'sse' ? STREAM_REQUEST_BODY : REQUEST_BODY,
    stream: scenario === 'sse', concurrency: Math.max(1, Math.round(concurrency / 2)),
  });
  return { label, dir, data, child, load, pid: child.pid };
}

/** One pass: both sides started (`first` of them first), warmed up, then the measured windows; its medians of B/A. */
async function pass(first) {
  const started = [];
  try {
    for (const label of first === 'A' ? ['A', 'B'] : ['B', 'A']) started.push(await side(label));
    const a = started.find((s) => s.label === 'A');
    const b = started.find((s) => s.label === 'B');
    const both = [a, b];
    const sample = () => both.map((s) => ({
      cpu: cpuMicros(`/proc/${s.pid}/stat`), main: cpuMicros(`/proc/${s.pid}/task/${s.pid}/stat`), done: s.load.completed,
    }));
    // Which side's load starts first alternates from window to window.
    const window = (ms, i = 0) => Promise.all((i % 2 === 0 ? both : [b, a]).map((s) => s.load.run(ms, false)));
    console.log(`pass with ${first} started first`);
    await window(3000);
    const ratios = { cpu: [], main: [], served: [] };
    for (let r = 1; r <= rounds; r++) {
      const before = sample();
      await window(seconds * 1000, r);
      const after = sample();
      const [fa, fb] = [0, 1].map((i) => {
        const n = after[i].done - before[i].done;
        return { n, cpu: (after[i].cpu - before[i].cpu) / n, main: (after[i].main - before[i].main) / n };
      });
      ratios.cpu.push(fb.cpu / fa.cpu);
      ratios.main.push(fb.main / fa.main);
      ratios.served.push(fb.n / fa.n);
      console.log(
        `window ${r}: A ${fa.n} requests, CPU ${fa.cpu.toFixed(0)} µs a request (main ${fa.main.toFixed(0)}) | ` +
          `B ${fb.n}, ${fb.cpu.toFixed(0)} (${fb.main.toFixed(0)}) | B/A CPU ${ratios.cpu.at(-1).toFixed(3)}, ` +
          `main ${ratios.main.at(-1).toFixed(3)}, served ${ratios.served.at(-1).toFixed(3)}`,
      );
    }
    if (env.AB_THREADS === '1') {
      const t0 = both.map((s) => [byThread(s.pid), s.load.completed]);
      await window(seconds * 2000);
      both.forEach((s, i) => {
        const t1 = byThread(s.pid);
        const n = s.load.completed - t0[i][1];
        const parts = [...t1].map(([k, v]) => [k, (v - (t0[i][0].get(k) ?? 0)) / n]).filter(([, v]) => v >= 0.5).sort((x, y) => y[1] - x[1]);
        console.log(`${s.label} CPU by thread, µs a request: ${parts.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
      });
    }
    const errors = both.map((s) => s.load.errors);
    const m = { cpu: median(ratios.cpu), main: median(ratios.main), served: median(ratios.served), errors };
    console.log(
      `median B/A (${first} started first): CPU a request ${m.cpu.toFixed(3)}, main thread ${m.main.toFixed(3)}, ` +
        `requests served ${m.served.toFixed(3)}; errors A ${errors[0]}, B ${errors[1]}`,
    );
    return m;
  } finally {
    for (const s of started) {
      await s.load.pool.close();
      await s.child.stop();
      rmSync(s.data, { recursive: true, force: true });
    }
  }
}

const orders = Number(env.AB_ORDERS ?? 1);
if (![1, 2].includes(orders)) throw new Error(`AB_ORDERS: '${env.AB_ORDERS}' is not 1 or 2`);
try {
  console.log(`A: ${targets.A} ${resolve(env.AB_DIR_A ?? join(HERE, '..'))}${env.AB_ENV_A ? ` ${env.AB_ENV_A}` : ''}${env.AB_ARGS_A ? ` ${env.AB_ARGS_A}` : ''}`);
  console.log(`B: ${targets.B} ${resolve(env.AB_DIR_B ?? join(HERE, '..'))}${env.AB_ENV_B ? ` ${env.AB_ENV_B}` : ''}${env.AB_ARGS_B ? ` ${env.AB_ARGS_B}` : ''}`);
  console.log(`${target}, ${scenario}, c=${concurrency} in all (half each), ${rounds} windows of ${seconds} s after 3 s of warm-up`);
  const passes = [await pass('A')];
  if (orders === 2) passes.push(await pass('B'));
  if (passes.length === 2) {
    // The side started second measured apart from which build it is: the two orders' medians, geometric mean.
    const both = (k) => Math.sqrt(passes[0][k] * passes[1][k]);
    console.log(`B/A over both orders (geometric mean of the two medians): CPU a request ${both('cpu').toFixed(3)}, main thread ${both('main').toFixed(3)}, requests served ${both('served').toFixed(3)}`);
  }
  if (passes.some((m) => m.errors.some((e) => e > 0))) process.exitCode = 1;
} finally {
  killAll();
}
process.exit();
