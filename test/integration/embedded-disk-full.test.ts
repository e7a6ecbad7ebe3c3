// The embedded engine's own disk fills up (issue 13, item 3): data_dir, engine and spool together, is a small tmpfs
// (mounted here; the tests run as root) that a filler file takes to its last byte while requests keep coming. They are
// still served; /ready is 503 and says why; nothing crashes. When the filler is removed, every acknowledged request
// reaches `requests` exactly once and the hourly rollup agrees. embedded-disk-readonly.test.ts is the read-only disk.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const dir = join(tempDir(t, 'tollgate-edisk-'), 'disk');
mkdirSync(dir);
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m', 'tollgate-test', dir]);
t.teardown(() => execFileSync('umount', ['-l', dir]));

/** Send `n` chat requests (every other one streamed); the x-request-id of each 200 answer. */
async function send(gw: TestApp, n: number, tag: string): Promise<string[]> {
  const acked: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/echo-1', stream: i % 2 === 1, messages: [{ role: 'user', content: `${tag} ${i} ${'x'.repeat(500)}` }] }),
    });
    await res.text();
    if (res.status === 200) acked.push(res.headers.get('x-request-id')!);
  }
  return acked;
}

const sample = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

t.test('a full disk: served, /ready says why, and every request lands once there is room', async (t) => {
  const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER } }, { dataDir: dir });
  const before = await send(gw, 20, 'before');
  await gw.flush();
  t.equal(before.length, 20);

  const filler = join(dir, 'filler');
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M', 'count=1024'], { stdio: 'ignore' });
  } catch {
    // dd stops with "No space left on device": that is the point
  }
  t.match(execFileSync('df', ['--output=avail', dir]).toString(), /\n\s*0\s*$/, 'the disk is full');

  const during = await send(gw, 30, 'during');
  t.equal(during.length, 30, 'every request is served while the disk is full');
  await waitFor(async () => (await fetch(`${gw.url}/ready`)).status === 503, 5000);
  const ready = (await (await fetch(`${gw.url}/ready`)).json()) as { error: { code: string; message: string } };
  t.equal(ready.error.code, 'TOLLGATE_ERR_STORE_UNAVAILABLE');
  t.match(ready.error.message, /ENOSPC|No space left/i, `the reason names the full disk (${ready.error.message})`);
  t.equal((await fetch(`${gw.url}/health`)).status, 200, '/health stays 200: the process is fine');
  const metrics = await gw.metrics();
  t.ok(sample(metrics, 'tollgate_spool_rows') > 0, `tollgate_spool_rows ${sample(metrics, 'tollgate_spool_rows')} rows wait`);

  rmSync(filler);
  await waitFor(async () => gw.app.tollgate.writer.depth === 0 && (await fetch(`${gw.url}/ready`)).status === 200, 30_000);
  const store = gw.app.tollgate.store;
  const raw = await store.query<{ id: string; n: string }>(`SELECT toString(request_id) AS id, count() AS n FROM ${store.t('requests')} GROUP BY id`);
  t.same(raw.filter((r) => Number(r.n) > 1), [], 'no request twice, even before a merge');
  const stored = new Set(raw.map((r) => r.id));
  t.same([...before, ...during].filter((id) => !stored.has(id)), [], 'every acknowledged request is stored (50)');
  t.equal(stored.size, 50);
  const [final] = await store.query<{ n: string; tokens: string }>(`SELECT count() AS n, sum(total_tokens) AS tokens FROM ${store.t('requests')} FINAL`);
  const [rollup] = await store.query<{ n: string; tokens: string }>(`SELECT sum(rows) AS n, sum(total_tokens) AS tokens FROM ${store.t('usage_hourly')}`);
  t.same(rollup, final, 'usage_hourly agrees with requests');
  t.notMatch(await gw.metrics(), /^tollgate_usage_rows_dropped_total\{[^}]*\} [1-9]/m, 'nothing dropped');
});
