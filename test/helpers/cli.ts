// Run the built CLI (dist/main.js; `npm run build` first) as a child process with a clean environment: `spawnCli` for
// a process the test talks to while it runs (a server), `runCli` for a command run to its end (exit, output, wall
// time). Every child is killed at teardown.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { request } from 'undici';
import { waitFor } from './wait.js';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { fakeProvider, startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';
import { freePort } from './net.js';
import { tempDir } from './tmp.js';

export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * None of the variables that select or override the config (or its secrets), and none of OpenTelemetry's, leak in
 * from the test run.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith('OTEL_') || ['PORT', 'TOLLGATE_API_KEY', 'TOLLGATE_CONFIG', 'TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE', 'TOLLGATE_SECRET_KEY', 'NODE_OPTIONS'].includes(k)) delete env[k];
  }
  return { ...env, ...extra };
}

export interface Proc {
  readonly child: ChildProcessWithoutNullStreams;
  readonly out: { stdout: string; stderr: string };
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly running: () => boolean;
}

/** Start the CLI and leave it running; it is killed (and awaited) at teardown if still up. */
export function spawnCli(t: { teardown(fn: () => unknown): void }, args: string[], opts: { cwd: string; env?: Record<string, string> }): Proc {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` before these tests`);
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: opts.cwd, env: cleanEnv(opts.env), stdio: 'pipe' });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const running = () => child.exitCode === null && child.signalCode === null;
  t.teardown(async () => {
    if (running()) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, out, exited, running };
}

/**
 * A config for the CLI in a new temporary directory: a free port on loopback, a data directory beside the file (rows
 * flushed every 50 ms), and one provider, `open`, on a fake OpenAI upstream started here. Removed at teardown.
 */
export async function cliConfig(t: { teardown(fn: () => unknown): void }, prefix: string): Promise<{ dir: string; file: string; base: string; up: FakeOpenAI }> {
  const dir = tempDir(t, prefix);
  const up = await startFakeOpenAI(t);
  const port = await freePort();
  const file = join(dir, 'config.yaml');
  writeFileSync(file, stringify({
    server: { host: '127.0.0.1', port },
    storage: { data_dir: join(dir, 'data'), batch: { flush_ms: 50 } },
    providers: { open: fakeProvider(up.baseUrl) },
  }));
  return { dir, file, base: `http://127.0.0.1:${port}`, up };
}

/** Start the gateway CLI on `configFile` and wait until `base`/health answers 200 (at most 30 s). */
export async function serveCli(t: { teardown(fn: () => unknown): void }, configFile: string, base: string, cwd: string): Promise<Proc> {
  const p = spawnCli(t, ['--config', configFile], { cwd });
  await waitFor(async () => {
    try {
      return (await request(`${base}/health`)).statusCode === 200;
    } catch {
      return false;
    }
  }, 30_000);
  return p;
}

/** Run `file` with `args` to its end (no standard input), killed after `timeoutMs`; killed at teardown if still up. */
export function runProcess(
  t: { teardown(fn: () => unknown): void }, file: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Run> {
  const t0 = Date.now();
  const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

export function runCli(
  t: { teardown(fn: () => unknown): void }, args: string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Run> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` before these tests`);
  return runProcess(t, process.execPath, [MAIN, ...args], { cwd: opts.cwd, env: cleanEnv(opts.env), timeoutMs: opts.timeoutMs ?? 30_000 });
}
