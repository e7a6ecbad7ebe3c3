// The spool on a full disk (docs/recording.md): a small tmpfs (mounted here; the tests run as root) fills up while
// rows keep coming. Nothing throws, the spool says why it cannot write, what the disk refused waits in memory and is
// written once there is room again; then every row reaches the store exactly once.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../../src/store/client.js';
import { parseRows, rowOf } from '../../src/store/segment.js';
import { Spool } from '../../src/store/spool.js';
import { BatchWriter } from '../../src/store/writer.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const dir = join(tempDir(t, 'tollgate-full-'), 'disk');
mkdirSync(dir);
execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tollgate-test', dir]);
t.teardown(() => execFileSync('umount', ['-l', dir]));

const stored: Record<string, unknown>[] = [];
const store = {
  insert: async (_t: string, rows: readonly Record<string, unknown>[]) => void stored.push(...rows),
  // The writer sends a segment's lines as they are, with their columns.
  insertLines: async (_t: string, lines: readonly string[], _token: string, columns: readonly string[]) =>
    void stored.push(...lines.map((l) => rowOf<Record<string, unknown>>(l, columns)!)),
} as unknown as Store;
const COLUMNS = ['request_id', 'pad'];
const spool = new Spool<Record<string, unknown>>({ dir, commitMs: 20, maxBytes: 1024 ** 3, columns: COLUMNS }, (r) => String(r.request_id));
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

t.test('a full disk with the store up: what the disk refuses reaches the store from memory, the rest once there is room', async (t) => {
  const dir2 = join(tempDir(t, 'tollgate-full2-'), 'disk');
  mkdirSync(dir2);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tollgate-test', dir2]);
  t.teardown(() => execFileSync('umount', ['-l', dir2]));
  // The store is down while the disk fills up, then comes back while the disk is still full.
  let storeUp = false;
  const inserts: { token: string; ids: string[] }[] = [];
  const store2 = {
    insertLines: async (_t: string, lines: readonly string[], token: string, columns: readonly string[]) => {
      if (!storeUp) throw new Error('connect ECONNREFUSED');
      inserts.push({ token, ids: lines.map((l) => String(rowOf<Record<string, unknown>>(l, columns)!.request_id)) });
    },
  } as unknown as Store;
  const spool2 = new Spool<Record<string, unknown>>({ dir: dir2, commitMs: 20, maxBytes: 1024 ** 3, columns: COLUMNS }, (r) => String(r.request_id));
  const writer2 = new BatchWriter(store2, 'requests', spool2, { maxRows: 1_000_000, flushMs: 30, retryBaseMs: 20, retryMaxMs: 100 }, {
    written: () => undefined, dropped: () => undefined, error: () => undefined, state: () => undefined,
  });
  t.teardown(() => writer2.close());
  const stored = () => inserts.flatMap((b) => b.ids);
  const pad = 'y'.repeat(900);
  for (let i = 0; i < 200; i++) {
    writer2.enqueue({ request_id: `m-${i}`, pad });
    if (i % 10 === 9) await new Promise((r) => setTimeout(r, 5));
  }
  await waitFor(() => spool2.failure !== null, 2000);
  t.equal(stored().length, 0, 'nothing stored while the store is down');
  storeUp = true;
  // What is left in the spool is the rows the open file took before the disk filled up: they wait there. (What the
  // disk refused goes to the store from memory at the writer's next flushes: wait until every row is either stored
  // or a whole line in the file.)
  // Every whole line but the files' headers (a line the disk cut counts once it is ended with `!`).
  const linesOnDisk = () =>
    readdirSync(dir2).filter((f) => f.endsWith('.jsonl')).reduce((n, f) => n + readFileSync(join(dir2, f), 'utf8').split('\n').slice(0, -1).filter((l) => !l.startsWith('{"$columns"')).length, 0);
  await waitFor(() => spool2.failure !== null && spool2.rows === spool2.openRows && stored().length + spool2.rows === 200 && stored().length + linesOnDisk() === 200, 3000);
  t.equal((spool2.failure as { code?: string }).code, 'ENOSPC', 'the disk is still full');
  const onDisk = spool2.rows;
  t.ok(stored().length >= 100, `${stored().length} rows reached the store from memory while the disk is full; ${onDisk} wait on disk`);
  t.equal(stored().length + onDisk, 200, 'every row is either stored or on disk');
  const files = readdirSync(dir2).filter((f) => f.endsWith('.jsonl'));
  const text = files.map((f) => readFileSync(join(dir2, f), 'utf8')).join('');
  t.notOk(text.endsWith('\n'), 'the disk took only part of the last line (that row went to memory whole)');

  execFileSync('mount', ['-o', 'remount,size=4m', dir2]);
  await waitFor(() => spool2.failure === null, 3000);
  await writer2.flush();
  const ids = stored();
  t.equal(ids.length, 200, 'all 200 rows reached the store');
  t.equal(new Set(ids).size, 200, 'each once: a line the disk cut is never both in memory and in its file');
  t.equal(new Set(inserts.map((b) => b.token)).size, inserts.length, 'every insert had its own deduplication token');
  t.equal(spool2.rows, 0);
  t.equal(spool2.bytes, 0, 'the byte count comes back to zero');
});

t.test('after a full disk, every file holds its header: a next process reads each row it left, once', async (t) => {
  const dir3 = join(tempDir(t, 'tollgate-full3-'), 'disk');
  mkdirSync(dir3);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tollgate-test', dir3]);
  t.teardown(() => execFileSync('umount', ['-l', dir3]));
  const down = { insertLines: async () => Promise.reject(new Error('connect ECONNREFUSED')) } as unknown as Store;
  const spool3 = new Spool<Record<string, unknown>>({ dir: dir3, commitMs: 20, maxBytes: 1024 ** 3, columns: COLUMNS }, (r) => String(r.request_id));
  const writer3 = new BatchWriter(down, 'requests', spool3, { maxRows: 40, flushMs: 30, retryBaseMs: 20, retryMaxMs: 50 }, {
    written: () => undefined, dropped: () => undefined, error: () => undefined, state: () => undefined,
  });
  const pad = 'z'.repeat(900);
  for (let i = 0; i < 200; i++) {
    writer3.enqueue({ request_id: `k-${i}`, pad });
    if (i % 10 === 9) await new Promise((r) => setTimeout(r, 5));
  }
  await waitFor(() => spool3.failure !== null, 2000);
  // Rows the disk refused wait in memory, memory segments once sealed (the writer, retrying its first segment against
  // the store that is down, seals no more: sealed here), and new rows keep coming meanwhile, each retry a new file.
  for (let i = 0; i < 6; i++) {
    spool3.seal();
    writer3.enqueue({ request_id: `k-${200 + i}`, pad });
    await new Promise((r) => setTimeout(r, 130));
  }
  // The disk grows, and new rows go to new files.
  execFileSync('mount', ['-o', 'remount,size=4m', dir3]);
  await waitFor(() => spool3.failure === null, 3000);
  for (let i = 206; i < 220; i++) writer3.enqueue({ request_id: `k-${i}`, pad });
  await new Promise((r) => setTimeout(r, 50));
  const files = readdirSync(dir3).filter((f) => f.endsWith('.jsonl'));
  t.ok(files.length >= 2, `${files.length} segment files`);
  for (const f of files) {
    const text = readFileSync(join(dir3, f), 'utf8');
    if (text !== '') t.ok(text.startsWith(`{"$columns":${JSON.stringify(COLUMNS)}}\n`) || !text.split('\n').some((l) => l.startsWith('[')), `${f} starts with its header, or holds no row`);
  }
  const inMemory = spool3.rows - files.reduce((n, f) => n + readFileSync(join(dir3, f), 'utf8').split('\n').filter((l) => l.startsWith('["') && !l.endsWith('!')).length, 0);
  await writer3.close(); // the store is down: what the files hold stays; what only memory held is lost with the process
  const next = new Spool<Record<string, unknown>>({ dir: dir3, commitMs: 20, maxBytes: 1024 ** 3, columns: COLUMNS }, (r) => String(r.request_id));
  t.teardown(() => next.close());
  const left = next.seal();
  const ids = left.flatMap((s) => parseRows<Record<string, unknown>>(next.readLines(s)).map((r) => String(r.request_id)));
  t.equal(ids.length, 220 - inMemory, `every row a file held is read by the next process (${inMemory} were in memory only)`);
  t.equal(new Set(ids).size, ids.length, 'each once');
  t.ok(ids.includes('k-219'), 'the rows written after the disk grew among them');
});

t.test('a header the disk refused goes to memory with the rows after it: the file gets one before its next row', async (t) => {
  const dir4 = join(tempDir(t, 'tollgate-full4-'), 'disk');
  mkdirSync(dir4);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tollgate-test', dir4]);
  t.teardown(() => execFileSync('umount', ['-l', dir4]));
  const spool4 = new Spool<Record<string, unknown>>({ dir: dir4, commitMs: 20, maxBytes: 1024 ** 3, columns: COLUMNS }, (r) => String(r.request_id));
  const turn = () => new Promise((r) => setImmediate(r));
  spool4.append({ request_id: 'a', pad: 'x' });
  await turn();
  t.equal(spool4.seal().length, 1, 'a sealed segment with row a; a new file, nothing in it yet');
  // Every page of the disk taken: a write to the new, empty file gets no byte in.
  const filler = join(dir4, 'filler');
  const fd = openSync(filler, 'w');
  const fill = (chunk: Buffer) => {
    for (;;) {
      try {
        writeSync(fd, chunk);
      } catch {
        return;
      }
    }
  };
  fill(Buffer.alloc(4096));
  fill(Buffer.alloc(1));
  closeSync(fd);
  spool4.append({ request_id: 'b', pad: 'x' });
  await turn();
  t.equal((spool4.failure as { code?: string } | null)?.code, 'ENOSPC', 'the header and row b were refused');
  spool4.seal(); // they go to a memory segment, the header with them
  rmSync(filler); // room again, before the spool's next retry: the next row goes to the same file
  spool4.append({ request_id: 'c', pad: 'x' });
  await turn();
  t.equal(spool4.failure, null, 'written');
  const files = readdirSync(dir4).filter((f) => f.endsWith('.jsonl')).sort();
  const last = readFileSync(join(dir4, files.at(-1)!), 'utf8');
  t.equal(last, `{"$columns":${JSON.stringify(COLUMNS)}}\n["c","x"]\n`, 'the file the header never reached has one before row c');
  spool4.close();
  const next = new Spool<Record<string, unknown>>({ dir: dir4, commitMs: 20, maxBytes: 1024 ** 3, columns: COLUMNS }, (r) => String(r.request_id));
  t.teardown(() => next.close());
  t.same(next.seal().flatMap((s) => parseRows<Record<string, unknown>>(next.readLines(s)).map((r) => r.request_id)), ['a', 'c'], 'the next process reads a and c (b was in memory only)');
});
