// The spool on a full disk (docs/recording.md): a small tmpfs (mounted here; the tests run as root) fills up while
// rows keep coming. Nothing throws, the spool says why it cannot write, what the disk refused waits in memory and is
// written once there is room again; then every row reaches the store exactly once.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../../src/store/client.js';
import { Spool } from '../../src/store/spool.js';
import { BatchWriter } from '../../src/store/writer.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const dir = join(tempDir(t, 'tollgate-full-'), 'disk');
mkdirSync(dir);
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tollgate-test', dir]);
t.teardown(() => execFileSync('umount', ['-l', dir]));

const stored: Record<string, unknown>[] = [];
const store = { insert: async (_t: string, rows: readonly Record<string, unknown>[]) => void stored.push(...rows) } as unknown as Store;
const spool = new Spool<Record<string, unknown>>({ dir, commitMs: 20, maxBytes: 1024 ** 3 }, (r) => String(r.request_id));
const dropped: number[] = [];
const writer = new BatchWriter(store, 'requests', spool, { maxRows: 1_000_000, flushMs: 60_000 }, {
  written: () => undefined, dropped: (n) => void dropped.push(n), error: () => undefined, state: () => undefined,
});
t.teardown(() => writer.close());

t.test('a full disk: no crash, the reason is known, rows wait in memory, and all land once there is room', async (t) => {
  const pad = 'x'.repeat(900);
  for (let i = 0; i < 200; i++) {
    t.equal(writer.enqueue({ request_id: `r-${i}`, pad }), true, `row ${i} taken`);
    if (i % 10 === 9) await new Promise((r) => setImmediate(r));
  }
  await waitFor(() => spool.failure !== null, 2000);
  t.equal((spool.failure as { code?: string }).code, 'ENOSPC', 'the spool knows the disk is full');
  t.equal(spool.rows, 200, 'every row is accounted for');
  t.same(dropped, [], 'nothing dropped (the spool is under max_bytes)');
  execFileSync('mount', ['-o', 'remount,size=4m', dir]);
  await waitFor(() => spool.failure === null, 3000);
  await writer.flush();
  t.equal(stored.length, 200, 'all 200 rows reached the store');
  t.equal(new Set(stored.map((r) => r.request_id)).size, 200, 'each once');
  t.equal(spool.rows, 0);
});
