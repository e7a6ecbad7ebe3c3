// The embedded engine's disk turns read-only under a running gateway (issue 13, item 3), as a failing disk does: an
// ext4 image on a loop device, mounted with `errors=remount-ro`, is made to report a filesystem error, and the kernel
// puts it into emergency read-only mode. The spool is on another disk (`storage.spool.dir`). Requests are still
// served; /ready is 503 with ClickHouse's reason; the rows wait in the spool on its own disk. The gateway is stopped,
// the disk checked (e2fsck) and mounted again, the gateway started again: the spool is replayed and every acknowledged
// request is in `requests` exactly once. (The tests run as root; embedded-disk-full.test.ts is the full disk.)

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { openStore } from '../../src/store/client.js';
import { demoProvidersYaml } from '../helpers/app.js';
import { serveCli, type Proc } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

t.setTimeout(180_000);
const dir = tempDir(t, 'tollgate-rodisk-');
const image = join(dir, 'disk.img');
const dataDir = join(dir, 'data');
const spoolDir = join(dir, 'spool');
mkdirSync(dataDir);
execFileSync('truncate', ['-s', '300M', image]);
execFileSync('mkfs.ext4', ['-q', image]);
const mount = () => execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, dataDir]);
mount();
let mounted = true;
t.teardown(() => {
  if (mounted) execFileSync('umount', ['-l', dataDir]);
});
const device = execFileSync('findmnt', ['-n', '-o', 'SOURCE', dataDir]).toString().trim().replace('/dev/', '');

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const file = join(dir, 'config.yaml');
writeFileSync(file, `
server: { host: 127.0.0.1, port: ${port} }
storage:
  data_dir: ${JSON.stringify(dataDir)}
  batch: { flush_ms: 100 }
  spool: { dir: ${JSON.stringify(spoolDir)} }
${demoProvidersYaml()}`);

const serve = (): Promise<Proc> => serveCli(t, file, base, dir);

async function send(n: number, tag: string): Promise<string[]> {
  const acked: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await request(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo/echo-1', stream: i % 2 === 1, messages: [{ role: 'user', content: `${tag} ${i}` }] }),
    });
    await res.body.text();
    if (res.statusCode === 200) acked.push(String(res.headers['x-request-id']));
  }
  return acked;
}

const spoolRows = async (): Promise<number> => {
  const text = await (await request(`${base}/metrics`)).body.text();
  return Number(/^tollgate_spool_rows (\S+)$/m.exec(text)?.[1] ?? NaN);
};

t.test('a read-only engine disk: served, /ready says why, the spool keeps the rows, and a restart lands them all', async (t) => {
  let gw = await serve();
  const before = await send(20, 'before');
  await waitFor(async () => (await spoolRows()) === 0, 10_000);

  writeFileSync(`/sys/fs/ext4/${device}/trigger_fs_error`, '1');
  t.match(execFileSync('findmnt', ['-n', '-o', 'OPTIONS', dataDir]).toString(), /\bemergency_ro\b|^ro\b/, 'the kernel made the disk read-only');
  const during = await send(30, 'during');
  t.equal(during.length, 30, 'every request is served while the engine cannot write');
  await waitFor(async () => (await request(`${base}/ready`)).statusCode === 503, 10_000);
  const ready = (await (await request(`${base}/ready`)).body.json()) as { error: { code: string; message: string } };
  t.equal(ready.error.code, 'TOLLGATE_ERR_STORE_UNAVAILABLE');
  t.match(ready.error.message, /^ClickHouse \(embedded\) (refuses inserts|does not answer)/, `the reason names the store (${ready.error.message})`);
  t.ok((await spoolRows()) >= 30, 'the rows wait in the spool');
  t.ok(readdirSync(spoolDir).some((f) => f.endsWith('.jsonl')), 'on its own disk');
  t.equal((await request(`${base}/health`)).statusCode, 200, '/health stays 200');

  gw.child.kill('SIGTERM');
  t.same(await gw.exited, { code: 0, signal: null }, 'the gateway stops cleanly on a read-only disk');

  // The operator's part: the disk is checked and mounted again.
  execFileSync('umount', [dataDir]);
  mounted = false;
  try {
    execFileSync('e2fsck', ['-fy', image], { stdio: 'ignore' });
  } catch (err) {
    // 1: errors were corrected, which is expected after the error the test caused
    if ((err as { status?: number }).status !== 1) throw err;
  }
  mount();
  mounted = true;

  gw = await serve();
  await waitFor(async () => (await spoolRows()) === 0 && (await request(`${base}/ready`)).statusCode === 200, 30_000);
  gw.child.kill('SIGTERM');
  await gw.exited;

  const store = openStore({ data_dir: dataDir, clickhouse_url: '', database: 'tollgate', username: 'default', password: '' });
  t.teardown(() => store.close());
  const raw = await store.query<{ id: string; n: string }>(`SELECT toString(request_id) AS id, count() AS n FROM ${store.t('requests')} GROUP BY id`);
  t.same(raw.filter((r) => Number(r.n) > 1), [], 'no request twice');
  const stored = new Set(raw.map((r) => r.id));
  t.same([...before, ...during].filter((id) => !stored.has(id)), [], 'every acknowledged request is stored (50), the 30 of the read-only time included');
  t.equal(stored.size, 50);
});
