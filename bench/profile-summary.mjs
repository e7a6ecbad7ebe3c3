#!/usr/bin/env node
// Summarise a V8 .cpuprofile (from BENCH_CPU_PROF=1 npm run bench): self time by function and by module, and
// inclusive time of the functions whose name matches a filter.
//
//   node bench/profile-summary.mjs bench/results/profiles/tollgate.<stamp>.cpuprofile [top=25] [inclusive-regex]

import { readFileSync } from 'node:fs';

process.stdout.on('error', () => process.exit(0)); // piped into head: stop quietly

const [file, topArg, filterArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [top] [inclusive-regex]\n');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Sample weights: timeDeltas[i] is the time before sample i.
const selfUs = new Map();
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  total += dt;
});

function where(cf) {
  const url = cf.url || '';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes('/dist/')) return `tollgate:${url.slice(url.indexOf('/dist/') + 1)}`;
  if (url.includes('/bench/')) return `bench:${url.slice(url.indexOf('/bench/') + 1)}`;
  if (url.startsWith('node:')) return url;
  return url ? url.split('/').slice(-2).join('/') : '(native/vm)';
}
const fname = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}:${cf.lineNumber + 1}`;

const byFn = new Map();
const byModule = new Map();
for (const [id, us] of selfUs) {
  const cf = nodes.get(id).callFrame;
  byFn.set(fname(cf), (byFn.get(fname(cf)) ?? 0) + us);
  const mod = cf.url ? where(cf).split(':').slice(0, cf.url.startsWith('node:') ? 2 : 1).join(':') : cf.functionName || '(vm)';
  byModule.set(mod, (byModule.get(mod) ?? 0) + us);
}

const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
const print = (title, m) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, us] of [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${pct(us)}  ${k}\n`);
};

process.stdout.write(`${file}: ${(total / 1e6).toFixed(2)} s sampled\n`);
print('self time by module', byModule);
print('self time by function', byFn);

if (filterArg) {
  // Inclusive time: a sample counts once for every distinct matching frame on its stack.
  const re = new RegExp(filterArg);
  const incl = new Map();
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const k = fname(nodes.get(cur).callFrame);
      if (re.test(k) && !seen.has(k)) {
        seen.add(k);
        incl.set(k, (incl.get(k) ?? 0) + dt);
      }
    }
  });
  print(`inclusive time of frames matching /${filterArg}/`, incl);
}
