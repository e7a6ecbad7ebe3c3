// Footprint (issue 17): the embedded ClickHouse engine (chdb, ~170 MiB of native library) is loaded only on the
// embedded path. The built CLI runs in a child process, as main.ts runs it; after it has opened its store and served
// a request, its memory map says whether libchdb is loaded: not on the server path (storage.clickhouse_url, a
// ClickHouse server in another process), yes on the embedded path. Linux only (/proc), as the machines tests run on.

import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { demoProvidersYaml } from '../helpers/app.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { serveCli } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

/** Start the CLI on `clickhouseUrl` ('' = embedded), wait until its store is open, serve one request; its pid. */
async function started(t: Test, clickhouseUrl: string): Promise<number> {
  const dir = tempDir(t, 'tollgate-engine-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `
server: { host: 127.0.0.1, port: ${port} }
storage:
  data_dir: ${JSON.stringify(join(dir, 'data'))}
  clickhouse_url: ${JSON.stringify(clickhouseUrl)}
  batch: { flush_ms: 50 }
${demoProvidersYaml()}`);
  const gw = await serveCli(t, file, base, dir);
  await waitFor(async () => {
    const r = await request(`${base}/ready`);
    await r.body.dump();
    return r.statusCode === 200;
  }, 30_000);
  const res = await request(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'which engine?' }] }),
  });
  t.equal(res.statusCode, 200, 'served');
  await res.body.dump();
  // The row lands (the store was used for writing, not only opened).
  await waitFor(async () => {
    const r = await request(`${base}/api/usage?period=today`);
    return ((await r.body.json()) as { summary: { requests: number } }).summary.requests === 1;
  }, 10_000);
  return gw.child.pid!;
}

const engineMapped = (pid: number): boolean => readFileSync(`/proc/${pid}/maps`, 'utf8').includes('libchdb');

t.test('server path: the embedded engine is never loaded', async (t) => {
  const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-engine-ch-') });
  const pid = await started(t, server.url);
  t.equal(engineMapped(pid), false, 'libchdb is not in the gateway process');
});

t.test('embedded path: the engine is loaded (the check above can fail)', async (t) => {
  const pid = await started(t, '');
  t.equal(engineMapped(pid), true, 'libchdb is in the gateway process');
});
