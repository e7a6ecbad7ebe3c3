// The batch writer and its spool (DESIGN.md decision 2): rows reach the spool on disk in the turn they are handed
// over, are flushed by size and by interval, and a segment is deleted only once ClickHouse took it; a failing store is
// retried forever (nothing dropped) with backoff; a full spool drops and counts; what a closed or killed writer left
// is replayed at the next start, and a segment inserted twice (a crash between insert and delete) counts once in
// `requests` and in the hourly rollup. Writes that should land are checked in the real embedded ClickHouse; the
// failure cases put a stand-in in front of it whose `insert` rejects or waits, since they test the writer, not the
// database.

import t from 'tap';
import type { Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrations.js';
import { interruptedRow, REQUEST_COLUMNS, toRow, type RequestRow } from '../../src/store/rows.js';
import { rowLine, rowOf } from '../../src/store/segment.js';
import { BatchWriter, type WriterEvents, type WriterOptions } from '../../src/store/writer.js';
import { Spool } from '../../src/store/spool.js';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { tempDir } from '../helpers/tmp.js';
import { newOutcome, recordOf } from '../../src/pipeline/outcome.js';
import { openTestStore } from '../helpers/store-paths.js';
import { waitFor } from '../helpers/wait.js';
import { leftoversRead } from '../helpers/spool.js';

const store: Store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-writer-' });
await migrate(store);

let seq = 0;
/** A row tagged with `tag` (stored in api_key_name) so each test counts only its own rows. */
function row(tag: string): RequestRow {
  const startedAt = Date.UTC(2024, 4, 15, 12) + seq++;
  return toRow(
    makeRecord({
      requestId: uuidv7(startedAt), startedAt, endedAt: startedAt + 10, endpoint: 'chat.completions', provider: 'mock',
      providerGroup: 'paid', model: 'mock/echo-1', requestedModel: 'mock/echo-1', modelKnown: true, apiKeyName: tag, stream: false,
      status: 'success', httpStatus: 200, errorType: '', usage: { input: 3, cached: null, cacheWrite: null, output: 2, reasoning: null },
      usageSource: 'reported', cost: { cost: 0.000001, listCost: 0.000001 }, latency: { kind: 'unary', totalMs: 10 }, upstreamMs: 8,
    }),
  );
}

async function countRows(tag: string): Promise<{ n: number; tokens: number }> {
  const [r] = await store.query<{ n: string; tokens: string }>(
    `SELECT count() AS n, sum(total_tokens) AS tokens FROM ${store.t('requests')} FINAL WHERE api_key_name = {tag:String}`,
    { tag },
  );
  return { n: Number(r!.n), tokens: Number(r!.tokens) };
}

interface Log {
  written: number[];
  dropped: [number, string][];
  errors: number[];
  states: boolean[];
}

function events(): { log: Log; events: WriterEvents } {
  const log: Log = { written: [], dropped: [], errors: [], states: [] };
  return {
    log,
    events: {
      written: (n) => void log.written.push(n),
      dropped: (n, reason) => void log.dropped.push([n, reason]),
      error: (_err, attempt) => void log.errors.push(attempt),
      state: (up) => void log.states.push(up),
    },
  };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** A stand-in store: each insert is recorded, then handled by `behave` (reject, wait, or pass to the real store). */
function standIn(behave: (call: number, table: string, rows: readonly Record<string, unknown>[], token?: string) => Promise<void>) {
  const calls: { table: string; rows: number; at: number; token?: string }[] = [];
  const s = {
    insert(table: string, rows: readonly Record<string, unknown>[], token?: string): Promise<void> {
      calls.push({ table, rows: rows.length, at: Date.now(), token });
      return behave(calls.length, table, rows, token);
    },
    // The writer sends a segment's lines as they are, with their columns; the stand-in sees them as rows.
    insertLines(table: string, lines: readonly string[], token?: string, columns: readonly string[] | null = null): Promise<void> {
      return s.insert(table, lines.map((l) => rowOf<Record<string, unknown>>(l, columns)!), token);
    },
  };
  return { store: s as unknown as Store, calls };
}

function spoolIn(dir: string, maxBytes = 1024 ** 3): Spool<RequestRow> {
  return new Spool<RequestRow>({ dir, commitMs: 20, maxBytes, columns: REQUEST_COLUMNS }, (r) => String(r.request_id));
}

function writer(s: Store, opts: WriterOptions, ev: WriterEvents, dir = tempDir(t, 'tollgate-spool-')): BatchWriter<RequestRow> {
  const w = new BatchWriter<RequestRow>(s, 'requests', spoolIn(dir), opts, ev);
  t.teardown(() => w.close());
  return w;
}

const segments = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();

t.test('a row is on disk before the next turn; flush by size writes without waiting for flushMs', async (t) => {
  const { log, events: ev } = events();
  const dir = tempDir(t, 'tollgate-spool-');
  const w = writer(store, { maxRows: 5, flushMs: 60_000 }, ev, dir);
  for (let i = 0; i < 4; i++) t.ok(w.enqueue(row('size')));
  await new Promise((r) => setImmediate(r));
  const files = segments(dir);
  t.equal(files.length, 1, 'one open segment');
  t.equal(readFileLines(join(dir, files[0]!)), 4, 'the four rows are in the file (written by one write in the turn they came)');
  await new Promise((r) => setTimeout(r, 150));
  t.same(log.written, [], 'four rows: below maxRows, nothing written yet');
  t.equal(w.depth, 4);
  const t0 = Date.now();
  t.ok(w.enqueue(row('size')));
  await waitFor(() => log.written.length > 0, 5000);
  t.ok(Date.now() - t0 < 5000, 'written long before flushMs (60 s)');
  t.same(log.written, [5], 'one batch of five');
  t.equal(w.depth, 0);
  t.same(segments(dir).filter((f) => readFileLines(join(dir, f)) > 0), [], 'the written segment is deleted');
  t.same(await countRows('size'), { n: 5, tokens: 25 }, 'five rows in ClickHouse');
  t.same(log.dropped, []);
  t.same(log.errors, []);
});

/** The lines of a segment file but its header. */
function readFileLines(path: string): number {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('{"$columns":')).length;
}

t.test('flush by interval: fewer than maxRows are written after flushMs', async (t) => {
  const { log, events: ev } = events();
  const w = writer(store, { maxRows: 1000, flushMs: 200 }, ev);
  const t0 = Date.now();
  t.ok(w.enqueue(row('interval')));
  t.ok(w.enqueue(row('interval')));
  t.ok(w.enqueue(row('interval')));
  t.equal(w.depth, 3);
  await new Promise((r) => setTimeout(r, 50));
  t.same(log.written, [], 'not written before flushMs');
  await waitFor(() => log.written.length > 0, 5000);
  t.ok(Date.now() - t0 >= 190, `written after the interval (${Date.now() - t0} ms)`);
  t.same(log.written, [3], 'the three rows in one batch');
  t.same(await countRows('interval'), { n: 3, tokens: 15 });
  t.ok(w.enqueue(row('interval')));
  await waitFor(() => log.written.length > 1, 5000);
  t.same(log.written, [3, 1], 'the timer re-arms for the next row');
  t.same(await countRows('interval'), { n: 4, tokens: 20 });
});

t.test('steady load against a slow store: rows that arrive during an insert wait for their own flushMs, so inserts stay few and large', async (t) => {
  const { log, events: ev } = events();
  // Each insert takes 150 ms (the embedded engine's insert of a large batch takes about that); rows arrive every 5 ms.
  const { store: slow, calls } = standIn((_call, _table, rows, token) => new Promise((r) => setTimeout(r, 150)).then(() => store.insert('requests', rows, token)));
  const flushMs = 300;
  const w = writer(slow, { maxRows: 100_000, flushMs }, ev);
  const t0 = Date.now();
  let sent = 0;
  let refused = 0;
  while (Date.now() - t0 < 2000) {
    if (w.enqueue(row('steady'))) sent++;
    else refused++;
    await new Promise((r) => setTimeout(r, 5));
  }
  t.equal(refused, 0, 'every row taken');
  await w.flush();
  t.equal(sum(log.written), sent, 'every row written');
  t.same(await countRows('steady'), { n: sent, tokens: sent * 5 }, 'and stored');
  // Over 2 s with a 300 ms flush and 150 ms inserts, one insert per (flushMs + insert time) at most: about 5, plus the
  // final flush. A writer that sealed again straight after each insert would make one every 150 ms (13 or more).
  t.ok(calls.length <= Math.ceil(2000 / flushMs) + 1, `${calls.length} inserts for ${sent} rows`);
  t.ok(calls.every((c, i) => i === 0 || c.at - calls[i - 1]!.at >= flushMs - 20 || i === calls.length - 1), `inserts at least flushMs apart: ${calls.map((c) => c.at - t0).join(', ')} ms`);
});

t.test('a segment goes to the store as the row lines on disk (not parsed and serialised again); written() gets their ids', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const sent: { lines: string[]; token?: string; columns?: readonly string[] | null }[] = [];
  let parsedInserts = 0;
  const s = {
    insert: async () => void parsedInserts++,
    insertLines: async (_t: string, lines: readonly string[], token?: string, columns?: readonly string[] | null) => void sent.push({ lines: [...lines], token, columns }),
  } as unknown as Store;
  const ids: string[] = [];
  const w = writer(s, { maxRows: 1000, flushMs: 60_000 }, { ...events().events, written: (_n, i) => void ids.push(...i) }, dir);
  const inFlight = row('raw');
  w.begin(String(inFlight.request_id), () => ({ ...inFlight, status: 'interrupted' }));
  const rows = [row('raw'), { ...row('raw'), requested_model: 'quote " backslash \\ newline \n é 你' }, row('raw')];
  for (const r of rows) t.ok(w.enqueue(r));
  await new Promise((r) => setImmediate(r));
  const file = readFileSync(join(dir, segments(dir)[0]!), 'utf8');
  const [header, ...lines] = file.split('\n');
  t.same(JSON.parse(header!), { $columns: REQUEST_COLUMNS }, 'the file starts with its header: the columns of its rows');
  t.equal(lines.filter((l) => l.startsWith('{"$begin":')).length, 1, 'and holds the in-flight request\'s marker (written with the turn\'s rows)');
  const rowLinesOnDisk = file.split('\n').filter((l) => l !== '' && !l.startsWith('{"$'));
  t.ok(rowLinesOnDisk.every((l) => l.startsWith('["')), 'each row is an array of its values');
  await w.flush();
  t.equal(sent.length, 1, 'one insert');
  t.same(sent[0]!.lines, rowLinesOnDisk, 'the row lines of the file, as they are (no header, no marker)');
  t.same(sent[0]!.columns, REQUEST_COLUMNS, 'in the header\'s columns');
  t.same(sent[0]!.lines.map((l) => JSON.parse(l) as unknown[]), rows.map((r) => REQUEST_COLUMNS.map((c) => r[c])), 'which are the rows\' values in those columns');
  t.match(sent[0]!.token, /^spool-\d{13}-/, 'with the segment\'s deduplication token');
  t.equal(parsedInserts, 0, 'the parsing path is not taken');
  t.same(ids, rows.map((r) => r.request_id), 'written() reports the ids of the rows stored');
});

t.test('the insert takes a new segment\'s row lines from memory, not read back from its file; a backlog\'s older segments from disk', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const spool = spoolIn(dir);
  t.teardown(() => spool.close());
  const rows = [row('mem'), row('mem'), row('mem')];
  for (const r of rows) t.ok(spool.append(r));
  spool.begin('in-flight', () => row('mem'));
  await new Promise((r) => setImmediate(r));
  const [seg] = spool.seal();
  const onDisk = readFileSync(seg!.path, 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('{"$'));
  t.same(spool.readLines(seg!), { columns: REQUEST_COLUMNS, lines: onDisk }, 'the lines the file holds, as they are');
  writeFileSync(seg!.path, ''); // the file changed under it: what the insert gets did not come from there
  const fromMemory = spool.readLines(seg!);
  t.same(fromMemory.lines.map((l) => rowOf(l, fromMemory.columns)), rows, 'the rows, from memory');

  // The store down: segments pile up. Only the two newest keep their lines; an older one is read from its file.
  const sealed: string[] = [seg!.name];
  for (let i = 0; i < 3; i++) {
    spool.append(row('mem'));
    await new Promise((r) => setImmediate(r));
    sealed.push(spool.seal().at(-1)!.name);
  }
  const segs = spool.seal();
  t.same(segs.map((s) => s.name), sealed, 'four segments wait');
  const stand = JSON.stringify(row('from-disk'));
  for (const s of segs) writeFileSync(s.path, `${stand}\n`);
  t.same(segs.map((s) => spool.readLines(s).lines[0] === stand), [true, true, false, false], 'the two oldest from their files, the two newest from memory');
});

t.test('close writes everything spooled, then refuses rows', async (t) => {
  const { log, events: ev } = events();
  const dir = tempDir(t, 'tollgate-spool-');
  const w = new BatchWriter<RequestRow>(store, 'requests', spoolIn(dir), { maxRows: 10, flushMs: 60_000 }, ev);
  for (let i = 0; i < 25; i++) t.ok(w.enqueue(row('drain')), `row ${i} accepted`);
  await w.close();
  t.equal(w.depth, 0, 'spool empty after close');
  t.equal(sum(log.written), 25, 'every row written');
  t.same(await countRows('drain'), { n: 25, tokens: 125 }, 'all 25 in ClickHouse');
  t.same(segments(dir), [], 'no segment left');
  t.notOk(w.enqueue(row('drain')), 'a closed writer takes no rows');
  t.same(log.dropped, [[1, 'spool_full']], 'and counts the refusal as a drop');
  await w.close(); // closing twice is harmless
});

t.test('a store that fails is retried forever with capped backoff: nothing dropped, one state change each way, the same token on every try', async (t) => {
  let down = true;
  const { store: s, calls } = standIn((_call, table, rows, token) => (down ? Promise.reject(new Error('ClickHouse is down')) : store.insert(table, rows, token)));
  const { log, events: ev } = events();
  const w = writer(s, { maxRows: 4, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 40 }, ev);
  for (let i = 0; i < 4; i++) w.enqueue(row('failing'));
  await waitFor(() => calls.length >= 8, 5000);
  t.same(log.states, [false], 'one state change to down, not one per retry');
  t.same(log.dropped, [], 'nothing dropped');
  t.equal(w.depth, 4, 'the rows wait in the spool');
  t.equal(w.up, false);
  const gaps = calls.slice(1, 8).map((c, i) => c.at - calls[i]!.at);
  t.ok(gaps.slice(3).every((g) => g <= 200), `backoff capped near retryMaxMs, not doubling to seconds (${gaps.join(', ')})`);
  for (let i = 0; i < 3; i++) w.enqueue(row('failing'));
  down = false;
  await w.flush();
  t.same(log.states, [false, true], 'and one back to up');
  t.equal(w.up, true);
  t.equal(sum(log.written), 7);
  t.same(await countRows('failing'), { n: 7, tokens: 35 });
  const firstToken = calls[0]!.token;
  t.match(firstToken, /^spool-\d{13}-[0-9a-f]{8}-\d{6}$/);
  t.ok(calls.filter((c) => c.rows === 4).every((c) => c.token === firstToken), 'every try of the segment carries its token');
});

t.test('while a failing store is retried, a full batch is sealed all the same: the backlog is segments of maxRows, each one insert once the store is back', async (t) => {
  let down = true;
  const { store: s, calls } = standIn((_call, table, rows, token) => (down ? Promise.reject(new Error('ClickHouse is down')) : store.insert(table, rows, token)));
  const { log, events: ev } = events();
  const dir = tempDir(t, 'tollgate-spool-');
  const w = writer(s, { maxRows: 4, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 40 }, ev, dir);
  for (let i = 0; i < 4; i++) w.enqueue(row('backlog'));
  await waitFor(() => calls.length >= 2, 5000); // the first batch's insert fails and is retried
  for (let i = 0; i < 14; i++) {
    w.enqueue(row('backlog'));
    await new Promise((r) => setImmediate(r));
  }
  const rowsIn = (f: string) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l.startsWith('[')).length;
  const files = segments(dir).map(rowsIn);
  t.same(files, [4, 4, 4, 4, 2], `the 18 rows are in segments of at most maxRows (4), not one that grows (${files.join(', ')})`);
  down = false;
  await w.flush();
  t.equal(sum(log.written), 18);
  t.same(await countRows('backlog'), { n: 18, tokens: 90 });
  t.ok(calls.every((c) => c.rows <= 4), 'every insert, failed or landed, is one batch at most');
});

t.test('caughtUp: every row spooled before the call written, or the count left past the bound; rows spooled after it do not hold it', async (t) => {
  let down = true;
  const { store: s } = standIn((_call, table, rows, token) => (down ? Promise.reject(new Error('ClickHouse is down')) : store.insert(table, rows, token)));
  const { events: ev } = events();
  const w = writer(s, { maxRows: 100, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 40 }, ev);
  for (let i = 0; i < 3; i++) w.enqueue(row('caught'));
  t.equal(await w.caughtUp(150), 3, 'the store refuses: three rows not written within the bound');
  t.equal(w.depth, 3, 'the rows still wait');
  down = false;
  // Rows keep coming while it waits (steady traffic): only those spooled before the call count.
  const steady = setInterval(() => w.enqueue(row('caught')), 1);
  t.teardown(() => clearInterval(steady));
  t.equal(await w.caughtUp(5000), 0, 'caught up once the store takes the rows');
  clearInterval(steady);
  t.ok((await countRows('caught')).n >= 3, 'the three rows spooled before are stored');
});

t.test('caughtUp after the wall clock stepped back: the rows spooled before still count (segments by identity, not time)', async (t) => {
  const { store: s } = standIn(() => Promise.reject(new Error('ClickHouse is down')));
  const { events: ev } = events();
  const w = writer(s, { maxRows: 100, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 40 }, ev);
  for (let i = 0; i < 2; i++) w.enqueue(row('stepped'));
  const now = Date.now;
  Date.now = () => now() - 3_600_000; // an NTP correction, a VM resumed
  try {
    t.equal(await w.caughtUp(150), 2, 'two rows not written, not "caught up" because the segment looks newer than now');
  } finally {
    Date.now = now;
  }
});

t.test('caughtUp while the spool\'s disk refuses to seal: the bound holds (no busy loop), and the rows are not claimed written', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const w = writer(store, { maxRows: 100, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 40 }, events().events, dir);
  for (let i = 0; i < 3; i++) w.enqueue(row('disk'));
  await new Promise((r) => setImmediate(r)); // the turn's lines reach the file
  renameSync(dir, `${dir}-gone`); // the directory gone: no new segment can be made, so the open one cannot be sealed
  t.teardown(() => renameSync(`${dir}-gone`, dir));
  const left = await w.caughtUp(200);
  t.ok(left !== 0, `not caught up (${left})`);
  t.equal((await countRows('disk')).n, 0, 'nothing written');
});

t.test('caughtUp past its bound stops: no seal while the disk refuses, during the wait or after it', async (t) => {
  // Each seal while the disk refuses spills what waits into a memory segment of its own, an insert each: the wait's
  // loop sealed every 20 ms, and went on after the export had answered (review s12h: 50 inserts a second).
  const real = spoolIn(tempDir(t, 'tollgate-spool-'));
  let refusing = true;
  let seals = 0;
  const spool = new Proxy(real, {
    get(target, prop) {
      if (prop === 'failure') return refusing ? new Error('ENOSPC: no space left on device') : target.failure;
      if (prop === 'seal') return () => (seals++, target.seal());
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const w = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000 }, events().events);
  t.teardown(() => w.close());
  for (let i = 0; i < 3; i++) w.enqueue(row('refusing'));
  const before = seals;
  t.equal(await w.caughtUp(300), -1, 'not told apart while the disk refuses');
  const during = seals - before;
  t.ok(during <= 2, `the write it starts seals, the wait does not seal again and again (${during} seals in 300 ms; every 20 ms before)`);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(seals - before - during, 0, 'and nothing once the bound has passed');
  refusing = false;
});

t.test('caughtUp counts a listed segment whose rows could not be read (a leftover the disk will not let be read)', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  // A leftover that cannot be read: a directory where a segment file would be (EISDIR), as EACCES or EIO would be.
  mkdirSync(join(dir, '1700000000000-0badcafe-000001.jsonl'));
  const { store: s } = standIn(() => Promise.resolve());
  const w = writer(s, { maxRows: 100, flushMs: 60_000, retryBaseMs: 10, retryMaxMs: 40 }, events().events, dir);
  t.ok((await w.caughtUp(200)) > 0, 'not caught up: the segment is still listed, its rows not written');
});

t.test('a read holds new inserts off: hold resolves once the insert running ends, and the next begins only at the release (or 2 x ms after)', async (t) => {
  let ends: (() => void)[] = [];
  const { store: s, calls } = standIn(() => new Promise<void>((resolve) => ends.push(resolve)));
  const { events: ev } = events();
  const w = writer(s, { maxRows: 2, flushMs: 60_000 }, ev);
  for (let i = 0; i < 6; i++) w.enqueue(row('hold'));
  await waitFor(() => calls.length === 1, 5000);
  let held = false;
  const holding = w.hold(5000).then((release) => ((held = true), release));
  await new Promise((r) => setTimeout(r, 30));
  t.equal(held, false, 'not while an insert runs');
  ends.shift()!();
  const release = await holding;
  await new Promise((r) => setTimeout(r, 100));
  t.equal(calls.length, 1, 'the next insert waits while the read holds them off');
  t.equal(w.insertsStarted, w.insertsEnded, 'none runs: the read sees every row stored and none going in');
  release();
  await waitFor(() => calls.length === 2, 5000);
  t.pass('and begins once released');
  const forgotten = await (async () => (ends.shift()!(), w.hold(50)))(); // never released: it lapses after 100 ms
  void forgotten;
  await waitFor(() => calls.length === 3, 5000);
  t.pass('a hold never released lapses');
  for (const end of ends) end();
  ends = [];
  const finish = setInterval(() => ends.splice(0).forEach((end) => end()), 5);
  t.teardown(() => clearInterval(finish));
});

t.test('a full spool drops new rows and counts them', async (t) => {
  const { store: s } = standIn(() => Promise.reject(new Error('down')));
  const { log, events: ev } = events();
  const one = `${rowLine(REQUEST_COLUMNS, row('full'))}\n`.length;
  const header = `{"$columns":${JSON.stringify(REQUEST_COLUMNS)}}\n`.length;
  const w = new BatchWriter<RequestRow>(s, 'requests', spoolIn(tempDir(t, 'tollgate-spool-'), header + one * 3 + 10), { maxRows: 100, flushMs: 60_000, retryBaseMs: 5, retryMaxMs: 5 }, ev);
  t.ok(w.enqueue(row('full')));
  t.ok(w.enqueue(row('full')));
  t.ok(w.enqueue(row('full')));
  t.notOk(w.enqueue(row('full')), 'fourth row refused');
  t.notOk(w.enqueue(row('full')), 'fifth row refused');
  t.equal(w.depth, 3, 'the spool never grows past maxBytes');
  t.same(log.dropped, [[1, 'spool_full'], [1, 'spool_full']], 'each refused row counted as spool_full');
  await w.close();
});

t.test("a full spool counts a new file's header in maxBytes", async (t) => {
  const one = `${rowLine(REQUEST_COLUMNS, row('headed'))}\n`.length;
  const header = `{"$columns":${JSON.stringify(REQUEST_COLUMNS)}}\n`.length;
  // Two files' headers and three rows are one byte too many: the third row, the first of the second file, fits only
  // without the header it brings.
  const max = 2 * header + 3 * one - 1;
  const spool = spoolIn(tempDir(t, 'tollgate-spool-'), max);
  t.ok(spool.append(row('headed')));
  t.ok(spool.append(row('headed')));
  t.equal(spool.seal().length, 1, 'the first file sealed (the store is not asked here)');
  t.notOk(spool.append(row('headed')), "the next file's first row refused: with its header it would pass maxBytes");
  t.equal(spool.bytes, header + 2 * one, 'one header and two rows');
  t.ok(spool.bytes <= max, `never past maxBytes (${spool.bytes} <= ${max})`);
  spool.close();
});

t.test('rows a closed writer could not write stay on disk and are replayed by the next one', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const { store: down } = standIn(() => Promise.reject(new Error('down')));
  const first = events();
  const w1 = new BatchWriter<RequestRow>(down, 'requests', spoolIn(dir), { maxRows: 100, flushMs: 60_000, retryBaseMs: 5 }, first.events);
  for (let i = 0; i < 6; i++) w1.enqueue(row('replay'));
  await w1.close();
  t.equal(segments(dir).length, 1, 'the segment stays');
  t.same(first.log.dropped, []);
  const spool = spoolIn(dir);
  t.same((await leftoversRead(spool)), { segments: 1, rows: 6, interrupted: 0 }, 'found at open');
  const second = events();
  const w2 = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000 }, second.events);
  await w2.flush();
  t.same(second.log.written, [6], 'replayed first, without waiting for new rows');
  t.same(await countRows('replay'), { n: 6, tokens: 30 });
  await w2.close();
  t.same(segments(dir), []);
});

t.test('a torn last line (a kill in the middle of a write) is skipped, the whole rows are kept', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const rows = [row('torn'), row('torn')];
  writeFileSync(join(dir, '1700000000000-0badcafe-000001.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n{"request_id":"01');
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spoolIn(dir), { maxRows: 100, flushMs: 60_000 }, ev);
  await w.flush();
  t.same(log.written, [2]);
  t.same(await countRows('torn'), { n: 2, tokens: 10 });
  await w.close();
});

t.test('the columns a row line holds are toRow\'s, in its order, and every column of the table', async (t) => {
  t.same(Object.keys(row('cols')), REQUEST_COLUMNS, 'toRow makes them in this order');
  const table = await store.query<{ name: string }>(
    `SELECT name FROM system.columns WHERE database = {db:String} AND table = 'requests' ORDER BY position`, { db: store.database });
  t.same(table.map((c) => c.name).sort(), [...REQUEST_COLUMNS].sort(), 'the requests table has these columns and no other');
});

t.test('segments an earlier version left are replayed: rows as objects (no header), or in fewer columns than now', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  // Before this format: a JSON object a row, a marker of a request in flight, no header.
  const objects = [row('earlier'), row('earlier')];
  const inFlight: RequestRow = { ...row('earlier'), status: 'interrupted', output_tokens: 0, ttft_ms: null };
  writeFileSync(join(dir, '1700000000100-0ea21e40-000001.jsonl'), `${objects.map((r) => JSON.stringify(r)).join('\n')}\n{"$begin":${JSON.stringify(inFlight)}}\n`);
  // A version whose rows had no trace_id yet: its header names the columns it wrote.
  const older = REQUEST_COLUMNS.filter((c) => c !== 'trace_id');
  const fewer: RequestRow = { ...row('earlier'), trace_id: 'not written' };
  writeFileSync(join(dir, '1700000000101-0ea21e40-000002.jsonl'), `{"$columns":${JSON.stringify(older)}}\n${rowLine(older, fewer)}\n`);
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spoolIn(dir), { maxRows: 100, flushMs: 60_000 }, ev);
  await w.flush();
  await w.close();
  t.same(log.written, [2, 1, 1], 'each segment in order, then the interrupted row (in the open segment, written as the spool opened)');
  const stored = await store.query<{ id: string; status: string; trace_id: string; tokens: string }>(
    `SELECT toString(request_id) AS id, status, trace_id, toString(total_tokens) AS tokens FROM ${store.t('requests')} FINAL WHERE api_key_name = 'earlier' ORDER BY id`);
  t.same(stored.map((r) => [r.id, r.status, r.trace_id, r.tokens]), [
    [objects[0]!.request_id, 'success', '', '5'],
    [objects[1]!.request_id, 'success', '', '5'],
    [inFlight.request_id, 'interrupted', '', '5'],
    [fewer.request_id, 'success', '', '5'],
  ], 'each row once; the column an older header did not name has its default');
  t.same(segments(dir), [], 'nothing left');
});

t.test('a segment inserted twice (a crash between the insert and the delete) counts once in every table', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const saved = tempDir(t, 'tollgate-spool-copy-');
  const rollup = async () => {
    const [r] = await store.query<{ n: string; tok: string; cost: string }>(
      `SELECT sum(rows) AS n, sum(total_tokens) AS tok, toString(sum(cost)) AS cost FROM ${store.t('usage_hourly')} WHERE api_key_name = 'twice'`);
    return { n: Number(r!.n), tokens: Number(r!.tok), cost: r!.cost };
  };
  // The first life: the insert lands, and the segment is copied aside just before it is deleted.
  const { store: copying } = standIn(async (_c, table, rows, token) => {
    await store.insert(table, rows, token);
    for (const f of segments(dir)) copyFileSync(join(dir, f), join(saved, f));
  });
  const a = events();
  const w1 = new BatchWriter<RequestRow>(copying, 'requests', spoolIn(dir), { maxRows: 100, flushMs: 60_000 }, a.events);
  for (let i = 0; i < 5; i++) w1.enqueue(row('twice'));
  await w1.close();
  const once = { raw: await countRows('twice'), rollup: await rollup() };
  t.same(once.raw, { n: 5, tokens: 25 });
  t.same(once.rollup, { n: 5, tokens: 25, cost: '0.000005' });
  // The second life finds the segment again (as if the delete never happened) and replays it.
  for (const f of segments(saved)) copyFileSync(join(saved, f), join(dir, f));
  const spool = spoolIn(dir);
  t.equal((await leftoversRead(spool)).rows, 5, 'the segment is back');
  const b = events();
  const w2 = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000 }, b.events);
  await w2.flush();
  await w2.close();
  t.same(b.log.written, [5], 'the replay was inserted (and acknowledged)');
  t.same(await countRows('twice'), once.raw, 'requests: counted once');
  t.same(await rollup(), once.rollup, 'usage_hourly: counted once');
  const [raw] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('requests')} WHERE api_key_name = 'twice'`);
  t.equal(Number(raw!.n), 5, 'not even a duplicate part waiting for a merge: the insert was deduplicated');
});

t.test('rows ClickHouse refuses as data are set aside one by one; the rest of the segment is stored and nothing waits behind them', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const { log, events: ev } = events();
  const w = writer(store, { maxRows: 1000, flushMs: 60_000 }, ev, dir);
  // A lone surrogate, written as the escape JSON.stringify makes of it: ClickHouse's JSON input refuses it.
  const poison: RequestRow = { ...row('poison'), requested_model: 'bad \ud800 model' };
  for (let i = 0; i < 6; i++) w.enqueue(i === 3 ? poison : row('poison'));
  await w.flush();
  t.same(await countRows('poison'), { n: 5, tokens: 25 }, 'the five good rows are stored');
  t.same(log.dropped, [[1, 'rejected']], 'the bad one is counted as rejected');
  t.equal(sum(log.written), 5);
  t.equal(w.depth, 0, 'the spool is empty: nothing is held back');
  const rejected = readFileSync(join(dir, 'rejected.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { reason: string; row: RequestRow });
  t.equal(rejected.length, 1);
  t.equal(rejected[0]!.row.request_id, poison.request_id, 'kept for a person to look at');
  t.match(rejected[0]!.reason, /surrogate/);
  w.enqueue(row('poison'));
  await w.flush();
  t.same(await countRows('poison'), { n: 6, tokens: 30 }, 'later rows go through');
});

t.test('client text with lone surrogates is made well-formed in the row', async (t) => {
  const r = toRow(makeRecord({
    requestId: uuidv7(Date.now()), startedAt: Date.now(), endedAt: Date.now(), endpoint: 'chat.completions', provider: '', providerGroup: '',
    model: '_other', requestedModel: 'x\ud800y\udc00z\ud83d\ude00', modelKnown: false, apiKeyName: 'k', stream: false, status: 'failure', httpStatus: 404,
    errorType: 'TOLLGATE_ERR_MODEL_NOT_FOUND', usage: { input: null, cached: null, cacheWrite: null, output: null, reasoning: null },
    usageSource: 'none', cost: { cost: 0, listCost: 0 }, latency: { kind: 'unary', totalMs: 1 }, upstreamMs: null,
  }));
  t.equal(r.requested_model, 'x\ufffdy\ufffdz\ud83d\ude00', 'lone halves replaced, a real pair kept');
});

t.test('a request in flight when the process dies comes back as an interrupted row, with what was known at the last seal', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const { store: down } = standIn(() => Promise.reject(new Error('down')));
  const spool = spoolIn(dir);
  const w1 = new BatchWriter<RequestRow>(down, 'requests', spool, { maxRows: 100, flushMs: 60_000, retryBaseMs: 5 }, events().events);
  const open = row('inflight-a');
  const done = row('inflight-b');
  let tokens = 0;
  w1.begin(String(open.request_id), () => ({ ...open, status: 'interrupted', output_tokens: tokens }));
  w1.begin(String(done.request_id), () => ({ ...done, status: 'interrupted' }));
  await new Promise((r) => setImmediate(r));
  t.equal(spool.inFlight, 2);
  w1.enqueue(done); // this one ends
  tokens = 42; // the stream goes on; the next seal carries the marker with what is known now
  spool.seal();
  t.equal(spool.inFlight, 1);
  await w1.close(); // the store is down: everything stays on disk, as after a kill
  const again = spoolIn(dir);
  t.same((await leftoversRead(again)), { segments: 2, rows: 1, interrupted: 1 }, 'one row to replay (the sealed segment), one request left in flight (its marker in the open one)');
  const log = events();
  const w2 = new BatchWriter<RequestRow>(store, 'requests', again, { maxRows: 100, flushMs: 60_000 }, log.events);
  await w2.flush();
  const rows = await store.query<{ request_id: string; status: string; output_tokens: string | null }>(
    `SELECT toString(request_id) AS request_id, status, output_tokens FROM ${store.t('requests')} FINAL WHERE api_key_name IN ('inflight-a', 'inflight-b') ORDER BY api_key_name`);
  t.same(rows.map((r) => [r.request_id, r.status, r.output_tokens === null ? null : Number(r.output_tokens)]), [
    [open.request_id, 'interrupted', 42],
    [done.request_id, 'success', 2],
  ], 'the ended request once, as it ended; the open one as interrupted with the usage known at the last seal');
  await w2.close();
  t.same((await leftoversRead(spoolIn(dir))), { segments: 0, rows: 0, interrupted: 0 }, 'nothing is left to replay twice');
});

t.test('a begin marker holds its row\'s values in the segment\'s columns, and the interrupted row it becomes is that row, column for column, a reported zero a zero', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const { store: down } = standIn(() => Promise.reject(new Error('down')));
  const spool = spoolIn(dir);
  const w1 = new BatchWriter<RequestRow>(down, 'requests', spool, { maxRows: 100, flushMs: 60_000, retryBaseMs: 5 }, events().events);
  // The snapshots the gateway's begin sink gives (src/app.ts): a fresh outcome's record at a request's start, and one
  // whose upstream reported some buckets as zero (an answer's first event: input known, nothing cached, no output yet).
  const startedAt = Date.UTC(2024, 4, 16, 9);
  const meta = (i: number) => ({ endpoint: 'chat.completions', requestId: uuidv7(startedAt + i), startedAt: startedAt + i, t0: performance.now(), requestedModel: '', stream: true, traceId: '' });
  const reported = { ...newOutcome(), usage: { input: 12, cached: 0, cacheWrite: 0, output: 0, reasoning: null }, usageSource: 'reported' as const };
  const snapshots = [interruptedRow(recordOf(newOutcome(), meta(0), 'marker-twin')), interruptedRow(recordOf(reported, meta(1), 'marker-twin'))];
  t.same([snapshots[1]!.cached_tokens, snapshots[1]!.output_tokens, snapshots[1]!.reasoning_tokens], [0, 0, null], 'the second: zeros reported, one bucket unknown');
  for (const snap of snapshots) w1.begin(String(snap.request_id), () => snap);
  await new Promise((r) => setImmediate(r));
  const [, ...markers] = readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.jsonl'))!), 'utf8').trimEnd().split('\n'); // after the header
  t.same(markers.map((m) => JSON.parse(m) as unknown), snapshots.map((snap) => ({ $begin: REQUEST_COLUMNS.map((c) => snap[c]) })), 'each marker: its row\'s values in the columns');
  t.ok(markers[0]!.length < 0.6 * JSON.stringify(snapshots[0]).length, `the marker (${markers[0]!.length} bytes) is less than 60 % of its row as an object (${JSON.stringify(snapshots[0]).length})`);
  await w1.close(); // the store is down: the markers stay on disk, as after a kill
  const again = spoolIn(dir);
  t.same((await leftoversRead(again)), { segments: 1, rows: 0, interrupted: 2 }, 'the segment holding the markers, and the requests it left in flight');
  const w2 = new BatchWriter<RequestRow>(store, 'requests', again, { maxRows: 100, flushMs: 60_000 }, events().events);
  await w2.flush();
  await w2.close();
  // Their twins: the whole snapshot rows inserted as they are, under other ids (a day later, to sort after them).
  const twins = snapshots.map((snap, i) => ({ ...snap, request_id: uuidv7(startedAt + 86_400_000 + i) }));
  await store.insert('requests', twins);
  const stored = await store.query<Record<string, unknown>>(
    `SELECT * EXCEPT (request_id, ts, end_ts), toString(request_id) AS id FROM ${store.t('requests')} FINAL WHERE api_key_name = 'marker-twin' ORDER BY id`);
  t.same(stored.map((r) => r.id), [...snapshots, ...twins].map((r) => r.request_id), 'the interrupted rows and their twins');
  const cols = stored.map(({ id: _id, ...c }) => c);
  t.same(cols[0], cols[2], 'every column of the first row from its marker equals the whole row\'s');
  t.same(cols[1], cols[3], 'and of the second: its zeros are zeros, not unknown');
  t.same([cols[1]!.cached_tokens, cols[1]!.cache_write_tokens, cols[1]!.output_tokens, cols[1]!.reasoning_tokens].map((v) => (v === null ? null : Number(v))), [0, 0, 0, null]);
  t.same(cols.map((c) => c.status), ['interrupted', 'interrupted', 'interrupted', 'interrupted']);
});
