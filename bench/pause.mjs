#!/usr/bin/env node
// How much slower the same work runs after the process has idled (docs/benchmarks.md, "Reads after a pause"). The
// query benchmark's uncached /api/quota after 1.1 s of idle is slower than the same read between other reads; this
// shows whether that is the gateway or the machine, with no gateway code at all: three pieces of work, each timed
// back to back and after pauses of growing length, wall time and the process's CPU time (every thread) alike.
//
//   - native:  a 3,000-round PBKDF2 (a small loop of native code over a few bytes);
//   - js:      building and serialising 2,000 small objects (V8's interpreter, compiler and allocator);
//   - engine:  `SELECT 1` on an embedded ClickHouse session (chdb): the engine's parse, plan and pipeline, a large body
//              of native code for no data at all.
//
//   npm run bench:pause                     (about 100 s)
//   BENCH_PAUSE_N=20 node bench/pause.mjs   (samples per pause; default 10)
//
// Prints one table: per piece of work and pause, the median wall and CPU time of one run, and the ratio of the median
// wall time to the back-to-back one. CPU time close to wall time says the work itself ran slower (not that it
// waited); the ratios are what to compare (these machines are shared: absolute times move between runs).

import { pbkdf2Sync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpus } from 'node:os';
import { guardRun, runMain } from './lib/main.mjs';
import { median } from './lib/stats.mjs';

const log = (m) => process.stderr.write(`[bench:pause] ${m}\n`);
const N = Number(process.env.BENCH_PAUSE_N ?? 10);
if (!Number.isInteger(N) || N < 1) throw new Error(`BENCH_PAUSE_N=${process.env.BENCH_PAUSE_N}: expected an integer >= 1`);
const PAUSES_MS = [0, 200, 1000, 2000];
const guard = guardRun({ log, limitS: 10 * 60, killAll: () => undefined });

function js() {
  let n = 0;
  for (let i = 0; i < 2000; i++) n += JSON.stringify({ i, s: String(i), a: [i, i + 1] }).length;
  return n;
}

async function main() {
  const { Session } = await import('chdb');
  const session = new Session(guard.dataDir('tollgate-pause-'));
  try {
    const work = {
      native: async () => pbkdf2Sync('tollgate', 'pause', 3000, 32, 'sha256'),
      js: async () => js(),
      engine: () => session.queryAsync('SELECT 1', { format: 'CSV' }),
    };
    for (const f of Object.values(work)) for (let i = 0; i < 20; i++) await f();
    const rows = [];
    for (const [name, f] of Object.entries(work)) {
      let base = NaN;
      for (const pause of PAUSES_MS) {
        const wall = [];
        const cpu = [];
        for (let i = 0; i < (pause === 0 ? N * 5 : N); i++) {
          if (pause > 0) await sleep(pause);
          const c0 = process.cpuUsage();
          const t0 = performance.now();
          await f();
          wall.push(performance.now() - t0);
          const c = process.cpuUsage(c0);
          cpu.push((c.user + c.system) / 1000);
        }
        const w = median(wall);
        if (pause === 0) base = w;
        rows.push([name, pause === 0 ? 'none (back to back)' : `${pause} ms`, w.toFixed(2), median(cpu).toFixed(2), `${(w / base).toFixed(1)}x`]);
        log(`${name} after ${pause} ms: ${w.toFixed(2)} ms`);
      }
    }
    const head = ['work', 'pause before each run', 'wall ms (median)', 'CPU ms (median, every thread)', 'wall vs back to back'];
    const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (r) => `| ${r.map((x, i) => (i < 2 ? x.padEnd(width[i]) : x.padStart(width[i]))).join(' | ')} |`;
    process.stdout.write(
      `Work after a pause: node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}); ${N} runs a pause (${N * 5} back to back)\n\n` +
        `${line(head)}\n|${width.map((w, i) => (i < 2 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|\n${rows.map(line).join('\n')}\n`,
    );
  } finally {
    session.close();
  }
  return 0;
}

runMain(main, { log, cleanup: guard.cleanup });
