// A real Prometheus (Debian's `prometheus` package; .ci/run installs it) on a loopback port, with its own temporary
// data directory, scraping the given loopback targets and loading the given rule files; stopped at teardown.

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './net.js';
import { tempDir, type Teardown } from './tmp.js';
import { waitFor } from './wait.js';

export interface Prometheus {
  readonly url: string;
  /** GET /api/v1/<path> with query parameters; the `data` of a success, or throws with Prometheus's error. */
  api<T>(path: string, params?: Record<string, string>): Promise<T>;
  /** The names (and labels) of the alerts firing now. */
  firing(): Promise<{ alertname: string; labels: Record<string, string> }[]>;
  output(): string;
}

export async function startPrometheus(
  t: Teardown, opts: { targets: readonly string[]; ruleFiles?: readonly string[]; scrapeInterval?: string; evaluationInterval?: string; metricsPath?: string },
): Promise<Prometheus> {
  const dir = tempDir(t, 'tollgate-prom-');
  const port = await freePort();
  const cfg = [
    'global:',
    `  scrape_interval: ${opts.scrapeInterval ?? '1s'}`,
    `  evaluation_interval: ${opts.evaluationInterval ?? '1s'}`,
    ...(opts.ruleFiles?.length ? ['rule_files:', ...opts.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`)] : []),
    'scrape_configs:',
    '  - job_name: tollgate',
    `    metrics_path: ${opts.metricsPath ?? '/metrics'}`,
    '    static_configs:',
    `      - targets: [${opts.targets.map((x) => JSON.stringify(x)).join(', ')}]`,
  ].join('\n');
  writeFileSync(join(dir, 'prometheus.yml'), cfg);
  const child = spawn('prometheus', [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`prometheus exited: ${output}`);
    try {
      return (await fetch(`${url}/-/ready`)).status === 200;
    } catch {
      return false;
    }
  }, 20_000);
  const api = async <T>(path: string, params: Record<string, string> = {}): Promise<T> => {
    const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params).toString()}`);
    const body = (await res.json()) as { status: string; data: T; error?: string; errorType?: string };
    if (body.status !== 'success') throw new Error(`${body.errorType ?? 'error'}: ${body.error ?? res.status}`);
    return body.data;
  };
  return {
    url,
    api,
    firing: async () =>
      (await api<{ alerts: { state: string; labels: Record<string, string> }[] }>('alerts')).alerts
        .filter((a) => a.state === 'firing')
        .map((a) => ({ alertname: a.labels.alertname!, labels: a.labels })),
    output: () => output,
  };
}
