// Run the built CLI (dist/main.js; `npm run build` first) as a child process with a clean environment, and collect
// its exit, output and wall time. The child is killed at teardown or after `timeoutMs`.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** None of the variables that select or override the config (or its secrets) leak in from the test run. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of [
    'PORT', 'TOLLGATE_CONFIG', 'TOLLGATE_PROXY_CLIENT_MAX_BODY_SIZE', 'TOLLGATE_SECRET_KEY', 'NODE_OPTIONS',
    'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  ]) {
    delete env[k];
  }
  return { ...env, ...extra };
}

export function runCli(
  t: { teardown(fn: () => unknown): void }, args: string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Run> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` before these tests`);
  const t0 = Date.now();
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: opts.cwd, env: cleanEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}
