// One gateway per spool directory (src/store/dir-lock.ts, docs/recording.md "One process per spool directory"): a
// second app on a directory in use is refused at build with one message naming the directory and the owner's pid, and
// the first one's rows are untouched (none taken for leftovers, none recorded as interrupted); once the first closes,
// it starts. A lock left by a process that is gone (a dead pid, a pid reused, another host's lock not refreshed) is
// taken over, so a `kill -9` never keeps a gateway from starting. Real apps on the embedded engine, one data
// directory for the file (chdb binds one per process); real lock files in temp directories.

import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { DirLockError, LOCK_FILE, STALE_MS, lockDir } from '../../src/store/dir-lock.js';
import { DEMO_PROVIDER, startApp, testConfig } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dataDir = tempDir(t, 'tollgate-lock-');
const spoolDir = join(dataDir, 'spool');
const lockPath = join(spoolDir, LOCK_FILE);
const RAW = { providers: { demo: DEMO_PROVIDER }, storage: { batch: { flush_ms: 60_000 } } };
const owner = (path = lockPath) => JSON.parse(readFileSync(path, 'utf8')) as { pid: number; host: string; start: string | null };

/** A pid that existed a moment ago and is gone now. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid;
}

t.test('a second app on a spool directory in use is refused with a message naming it and the owner; it starts once the first closes', async (t) => {
  const first = await startApp(t, RAW, { dataDir });
  const res = await request(`${first.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.statusCode, 200);
  const id = String(res.headers['x-request-id']);
  await res.body.text();
  t.equal(first.app.tollgate.writer.depth, 1, "the first app's row waits in its open segment");
  const segments = readdirSync(spoolDir).filter((f) => f.endsWith('.jsonl'));

  const err = await build({ config: new ConfigHolder(testConfig(RAW, dataDir)), logger: false, processMetrics: false }).then(
    async (app) => {
      await app.close();
      return null;
    },
    (e: unknown) => e,
  );
  t.type(err, DirLockError, 'the second build is refused');
  t.equal((err as Error).message.split('\n').length, 1, 'one line');
  t.match((err as Error).message, `the spool directory ${spoolDir} is in use by another Tollgate process (pid ${process.pid} on host ${hostname()}`);
  t.match((err as Error).message, 'storage.data_dir', 'and says what to change');
  t.same(readdirSync(spoolDir).filter((f) => f.endsWith('.jsonl')), segments, "the first app's segment was not touched (not replayed, not deleted)");

  const rows = await first.rows();
  t.same(rows.map((r) => [r.request_id, r.status]), [[id, 'success']], "the first app's request is stored once, as a success (not interrupted)");
  await first.close();
  t.equal(existsSync(lockPath), false, 'the lock is released on close');

  const second = await startApp(t, RAW, { dataDir });
  t.equal(owner().pid, process.pid, 'the second app starts and holds the lock');
  await second.close();
});

t.test('a lock left by a dead process is taken over at start (a kill -9 does not keep the gateway down)', async (t) => {
  mkdirSync(spoolDir, { recursive: true });
  const pid = deadPid();
  writeFileSync(lockPath, JSON.stringify({ pid, host: hostname(), boot: null, start: null, at: '2026-01-01T00:00:00.000Z' }));
  const app = await startApp(t, RAW, { dataDir });
  t.equal(owner().pid, process.pid, `the lock of pid ${pid} (gone) is now this process's`);
  const res = await request(`${app.url}/ready`);
  t.equal(res.statusCode, 200, 'and the gateway is ready');
  await res.body.text();
  await app.close();
  t.equal(existsSync(lockPath), false);
});

t.test('a read-only spool directory: the start is refused with one message naming it and what to fix (not a bare EROFS)', async (t) => {
  const ro = join(tempDir(t, 'tollgate-ro-'), 'spool');
  mkdirSync(ro);
  execFileSync('mount', ['--bind', ro, ro]);
  execFileSync('mount', ['-o', 'remount,bind,ro', ro]);
  t.teardown(() => execFileSync('umount', ['-l', ro]));
  const raw = { ...RAW, storage: { ...RAW.storage, spool: { dir: ro } } };
  const err = await build({ config: new ConfigHolder(testConfig(raw, dataDir)), logger: false, processMetrics: false }).then(
    async (app) => {
      await app.close();
      return null;
    },
    (e: unknown) => e,
  );
  t.type(err, DirLockError, 'the build is refused');
  t.equal((err as Error).message.split('\n').length, 1, 'one line');
  t.match((err as Error).message, `storage: cannot use the spool directory ${ro} (EROFS: read-only file system`);
  t.match((err as Error).message, 'mount it read-write, or point storage.spool.dir at a writable disk', 'and says what to fix');
});

t.test('a pid reused since the lock was taken (a container restarted as pid 1) is not its owner', async (t) => {
  const dir = tempDir(t, 'tollgate-lock-reuse-');
  // This process's pid is alive, but it started at another time than the lock says.
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, host: hostname(), boot: null, start: '1', at: '2026-01-01T00:00:00.000Z' }));
  const lock = lockDir(dir);
  t.same(lock.replaced, { pid: process.pid, host: hostname(), boot: null, start: '1', at: '2026-01-01T00:00:00.000Z' }, 'taken over, and what it replaced is said');
  t.not(owner(lock.path).start, '1');
  t.throws(() => lockDir(dir), { name: 'DirLockError', message: /in use by another Tollgate process \(pid \d+/ }, 'while its own lock is held: refused');
  lock.release();
  t.equal(existsSync(lock.path), false);
});

t.test("another host's lock: held while refreshed, taken over once it is not", async (t) => {
  const dir = tempDir(t, 'tollgate-lock-host-');
  const path = join(dir, LOCK_FILE);
  writeFileSync(path, JSON.stringify({ pid: 1, host: 'elsewhere.invalid', boot: null, start: null, at: '2026-01-01T00:00:00.000Z' }));
  t.throws(() => lockDir(dir), { name: 'DirLockError', message: `pid 1 on host elsewhere.invalid` }, 'refreshed: held');
  const old = new Date(Date.now() - STALE_MS - 1000);
  utimesSync(path, old, old);
  const lock = lockDir(dir);
  t.equal(owner(path).host, hostname(), 'not refreshed for STALE_MS: taken over');
  lock.release();
  // An unreadable lock (a process killed between its create and its write) ages the same way.
  writeFileSync(path, '');
  t.throws(() => lockDir(dir), { name: 'DirLockError', message: 'its lock file is unreadable' });
  utimesSync(path, old, old);
  lockDir(dir).release();
  t.equal(existsSync(path), false);
});

t.test("release leaves a lock that is not this one's", async (t) => {
  const dir = tempDir(t, 'tollgate-lock-release-');
  const lock = lockDir(dir);
  const path = join(dir, LOCK_FILE);
  // Removed by hand and taken by another process meanwhile.
  const { rmSync } = await import('node:fs');
  rmSync(path);
  writeFileSync(path, JSON.stringify({ pid: 1, host: 'elsewhere.invalid', boot: null, start: null, at: '2026-01-01T00:00:00.000Z' }));
  lock.release();
  t.equal(owner(path).host, 'elsewhere.invalid', "the other process's lock stays");
});
