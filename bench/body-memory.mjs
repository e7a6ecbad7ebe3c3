#!/usr/bin/env node
// Memory per request body: how much resident memory one large request costs the gateway (issue 12, item 6).
//
// For each body size and each path, a fresh gateway (the built CLI, dist/main.js, with a temporary config and data
// directory) is started, warmed with one small request, left idle, and then sent exactly one request whose body is
// that many bytes (a messages[0].content string of 'x'). Its idle RSS (VmRSS) and its peak RSS (VmHWM, which the
// kernel keeps for the whole life of the process) are read from /proc/<pid>/status; the table shows the peak over
// idle and that figure as a multiple of the body. Paths:
//
//   mock      the built-in in-process mock provider answers (the body is parsed and read, never sent)
//   upstream  an OpenAI-format provider on loopback (this process) receives the body and discards it
//
// The baseline in the same run is the body itself: the multiple is what a request costs over the bytes it carries.
// The target is (peak - idle) <= ~2x the body for 128 MiB. Exits non-zero when a request fails, not when a
// multiple is high.
//
//   npm run bench:bodies
//   BENCH_BODY_MIB=1,16 npm run bench:bodies

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { guardRun, runMain } from './lib/main.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const MAIN = join(HERE, '..', 'dist', 'main.js');
const MIB = 1024 * 1024;
const SIZES_MIB = (process.env.BENCH_BODY_MIB || '1,16,64,128').split(',').map((s) => {
  const n = Number(s);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`BENCH_BODY_MIB=${process.env.BENCH_BODY_MIB}: expected sizes in MiB, e.g. 1,16,64,128`);
  return n;
});
const PATHS = ['mock', 'upstream'];
const TARGET_MULTIPLE = 2;

const log = (msg) => process.stderr.write(`[bench:bodies] ${msg}\n`);
const children = new Set();
const killAll = () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
};
const guard = guardRun({ log, limitS: 120 + SIZES_MIB.length * PATHS.length * 60, killAll });

/** The fake upstream: reads and discards every request body, answers one OpenAI chat completion. */
function startUpstream() {
  const received = [];
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c) => (bytes += c.length));
    req.on('end', () => {
      received.push(bytes);
      const body = JSON.stringify({
        id: 'chatcmpl-bench', object: 'chat.completion', created: 1700000000, model: 'big-1',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  // Longer than any pause in the run: a keep-alive socket the upstream closes while the gateway reuses it is an EPIPE.
  server.keepAliveTimeout = 120_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, received, origin: `http://127.0.0.1:${server.address().port}` })));
}

function configYaml(dataDir, upstream, limit) {
  return `server: { host: 127.0.0.1, port: 0, body_limit_bytes: ${limit} }
storage: { data_dir: ${JSON.stringify(dataDir)}, database: tollgate }
providers:
  demo:
    name: Mock
    group: paid
    format: mock
    mock: { chunks: 1, latency_ms: 0, chunk_delay_ms: 0 }
    models: { echo-1: { kind: llm } }
  up:
    name: Loopback upstream
    group: paid
    format: openai
    base_url: ${upstream}/v1
    auth: { type: api_key, key: sk-bench }
    models: { big-1: { kind: llm } }
`;
}

/** Start the gateway; resolves with its pid and origin once it logs that it listens. */
function startGateway(dir, upstream, limit) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configYaml(join(dir, 'data'), upstream, limit));
  const child = spawn(process.execPath, [MAIN, '--config', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  children.add(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      out += d;
      const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve({ child, origin: m[1] });
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`gateway exited (${code}) before listening:\n${out}`)));
  });
}

async function stopGateway(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  children.delete(child);
}

function statusKiB(pid, field) {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

/** A request body of exactly `bytes` bytes: one user message whose content is 'x' repeated. */
function bodyOf(model, bytes) {
  const head = Buffer.from(`{"model":${JSON.stringify(model)},"messages":[{"role":"user","content":"`);
  const tail = Buffer.from('"}]}');
  const body = Buffer.allocUnsafeSlow(bytes);
  head.copy(body, 0);
  body.fill(0x78, head.length, bytes - tail.length);
  tail.copy(body, bytes - tail.length);
  return body;
}

function post(origin, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mib = (kib) => (kib / 1024).toFixed(0);

async function measure({ upstream, dataDir }, path, sizeMiB, n) {
  const bytes = Math.round(sizeMiB * MIB);
  const model = path === 'mock' ? 'demo/echo-1' : 'up/big-1';
  const { child, origin } = await startGateway(join(dataDir, `run-${n}`), upstream.origin, Math.max(bytes, MIB));
  try {
    const warm = await post(origin, Buffer.from(JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] })));
    if (warm.status !== 200) throw new Error(`warm-up answered ${warm.status}: ${warm.text}`);
    let body = bodyOf(model, bytes);
    await sleep(1000);
    const idle = statusKiB(child.pid, 'VmRSS');
    const before = upstream.received.length;
    const res = await post(origin, body);
    body = null;
    if (res.status !== 200) throw new Error(`${path} ${sizeMiB} MiB answered ${res.status}: ${res.text.slice(0, 300)}`);
    if (path === 'upstream' && upstream.received.length !== before + 1) throw new Error('the upstream did not receive the request');
    const peak = statusKiB(child.pid, 'VmHWM');
    const sent = path === 'upstream' ? upstream.received.at(-1) : null;
    return { path, sizeMiB, bytes, idle, peak, sent };
  } finally {
    await stopGateway(child);
  }
}

async function main() {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` (npm run bench:bodies does)');
  const dataDir = guard.dataDir('tollgate-bench-bodies-');
  const upstream = await startUpstream();
  const rows = [];
  let n = 0;
  try {
    for (const sizeMiB of SIZES_MIB) {
      for (const path of PATHS) {
        const r = await measure({ upstream, dataDir }, path, sizeMiB, n++);
        rows.push(r);
        log(`${path} ${sizeMiB} MiB: idle ${mib(r.idle)} MiB, peak ${mib(r.peak)} MiB`);
      }
    }
  } finally {
    upstream.server.close();
  }
  const lines = [
    '| path | body | idle RSS | peak RSS | peak - idle | (peak - idle) / body | upstream received |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const over = (r.peak - r.idle) * 1024;
    lines.push(`| ${r.path} | ${r.sizeMiB} MiB | ${mib(r.idle)} MiB | ${mib(r.peak)} MiB | ${mib(r.peak - r.idle)} MiB | ${(over / r.bytes).toFixed(2)}x | ${r.sent === null ? '-' : `${(r.sent / MIB).toFixed(2)} MiB`} |`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  const largest = rows.filter((r) => r.sizeMiB === Math.max(...SIZES_MIB));
  for (const r of largest) {
    const multiple = ((r.peak - r.idle) * 1024) / r.bytes;
    process.stdout.write(`${r.path} ${r.sizeMiB} MiB: ${multiple.toFixed(2)}x the body over idle (target <= ~${TARGET_MULTIPLE}x): ${multiple <= TARGET_MULTIPLE * 1.1 ? 'met' : 'NOT met'}\n`);
  }
  return 0;
}

runMain(main, { log, cleanup: () => guard.cleanup() });
