#!/usr/bin/env node
// Where a process's CPU goes, from `perf script` output (perf record -g -p <pid> with node --perf-basic-prof):
// on-CPU samples by thread kind (the main thread, Node's helper threads, the embedded engine's threads) and, for each,
// by what the sampled function belongs to (the gateway's code, fastify, undici, Node's HTTP and streams, JSON,
// the garbage collector, the kernel, the engine). Leaf frames only (self time).
//
//   perf record -F 999 -g -p <pid> -o perf.data -- sleep 10
//   perf script -i perf.data -F tid,comm,ip,sym,dso > perf.txt
//   node bench/perf-breakdown.mjs perf.txt <main tid>

import { readFileSync } from 'node:fs';

const [file, mainTidArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/perf-breakdown.mjs <perf script output> [main tid]\n');
  process.exit(2);
}
const text = readFileSync(file, 'utf8');
// perf script -F tid,comm,ip,sym,dso: a header line per sample ("comm tid"), then its stack, leaf first.
const samples = [];
let cur = null;
for (const line of text.split('\n')) {
  if (line === '') {
    cur = null;
    continue;
  }
  if (!line.startsWith('\t') && !line.startsWith(' ')) {
    const m = /^(.*?)\s+(\d+)\s*$/.exec(line.trim());
    cur = { comm: m ? m[1] : line.trim(), tid: m ? Number(m[2]) : 0, frames: [] };
    samples.push(cur);
    continue;
  }
  if (cur) cur.frames.push(line.trim());
}
const mainTid = mainTidArg ? Number(mainTidArg) : mostCommonTid();
function mostCommonTid() {
  const n = new Map();
  for (const s of samples) n.set(s.tid, (n.get(s.tid) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1])[0][0];
}

function owner(leaf) {
  const l = leaf ?? '';
  if (/\(\[kernel|\[kernel\.kallsyms\]/.test(l)) return 'kernel (syscalls, network, files)';
  if (/libchdb/.test(l)) return 'ClickHouse engine (libchdb)';
  if (/\/dist\/|tollgate/.test(l) && /JS:/.test(l)) return 'gateway code (JS)';
  if (/node_modules\/(fastify|@fastify|find-my-way|avvio|light-my-request|fast-json-stringify|secure-json-parse)/.test(l)) return 'fastify (JS)';
  if (/node_modules\/undici/.test(l) || /wasm/.test(l)) return 'undici (JS, llhttp wasm)';
  if (/node_modules\//.test(l) && /JS:/.test(l)) return 'other packages (JS)';
  if (/JS:.*node:/.test(l)) return "Node's HTTP, streams, events (JS)";
  if (/Json(Parser|Stringifier)|JsonParse|JsonStringify/.test(l)) return 'JSON.parse / JSON.stringify (V8)';
  if (/Scaveng|Mark|Sweep|Heap::|GCTracer|Evacuat|Compactor|ConcurrentMarking|MinorM/.test(l)) return 'garbage collector (V8)';
  if (/compiler::|Compile|Turbofan|Maglev|Sparkplug|Baseline/.test(l)) return 'JIT compiler (V8)';
  if (/llhttp/.test(l)) return "Node's HTTP parser (llhttp)";
  if (/Builtins_|v8::|node::|uv_|libuv|Runtime_/.test(l)) return 'V8 builtins and runtime, Node native';
  if (/libc\.so|malloc|free|memmove|memcpy|ld-linux|libstdc/.test(l)) return 'libc (malloc, memcpy)';
  if (/JS:/.test(l)) return 'other JS';
  return 'other native';
}

// Native work stands for itself; V8's builtins and runtime (property loads, calls, allocation...) are charged to the
// nearest JS function up the stack: they run on its behalf.
const NATIVE_OWNERS = new Set(['kernel (syscalls, network, files)', 'ClickHouse engine (libchdb)', 'JSON.parse / JSON.stringify (V8)', 'garbage collector (V8)', 'JIT compiler (V8)', "Node's HTTP parser (llhttp)", 'libc (malloc, memcpy)']);
function ownerOf(frames) {
  const leaf = owner(frames[0]);
  if (NATIVE_OWNERS.has(leaf)) return leaf;
  for (const f of frames) if (/JS:|wasm/.test(f)) return owner(f);
  return leaf;
}

const kind = (s) => (s.tid === mainTid ? 'main thread' : s.comm === 'node' ? "Node's helper threads (GC, JIT, libuv pool)" : `engine threads (${'ClickHouse'})`);
const table = new Map();
for (const s of samples) {
  const k = `${kind(s)}\t${ownerOf(s.frames)}`;
  table.set(k, (table.get(k) ?? 0) + 1);
}
const total = samples.length;
const byKind = new Map();
for (const [k, n] of table) byKind.set(k.split('\t')[0], (byKind.get(k.split('\t')[0]) ?? 0) + n);
process.stdout.write(`${total} samples, main thread tid ${mainTid}\n\n| where | what | share of the process's CPU |\n|---|---|---:|\n`);
for (const [kindName, kn] of [...byKind.entries()].sort((a, b) => b[1] - a[1])) {
  process.stdout.write(`| **${kindName}** | (all) | **${((kn / total) * 100).toFixed(1)}%** |\n`);
  for (const [k, n] of [...table.entries()].filter(([k]) => k.startsWith(`${kindName}\t`)).sort((a, b) => b[1] - a[1])) {
    if (n / total < 0.005) continue;
    process.stdout.write(`| | ${k.split('\t')[1]} | ${((n / total) * 100).toFixed(1)}% |\n`);
  }
}

// With a third argument (a regex), the functions whose samples are charged to a matching owner, most first.
const filter = process.argv[4];
if (filter) {
  const re = new RegExp(filter);
  const fns = new Map();
  let n = 0;
  for (const s of samples) {
    if (s.tid !== mainTid || !re.test(ownerOf(s.frames))) continue;
    const leaf = owner(s.frames[0]);
    const f = NATIVE_OWNERS.has(leaf) ? s.frames[0] : s.frames.find((x) => /JS:|wasm/.test(x)) ?? s.frames[0];
    const name = f.replace(/^[0-9a-f]+\s+/, '').replace(/\s*\(\/tmp\/perf-\d+\.map\)$/, '').replace(/file:\/\/\/\S*\/dist\//, '');
    fns.set(name, (fns.get(name) ?? 0) + 1);
    n++;
  }
  process.stdout.write(`\nmain thread, ${filter}: ${n} samples\n`);
  for (const [name, c] of [...fns.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40)) process.stdout.write(`${((c / total) * 100).toFixed(2).padStart(6)}%  ${name}\n`);
}
