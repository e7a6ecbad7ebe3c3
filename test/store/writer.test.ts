// The bounded batch writer (DESIGN.md decision 2): flush by size and by interval, drain on close, count what is
// dropped, retry failed inserts. Writes that should land are checked in the real embedded ClickHouse; the
// failure cases use a stand-in whose `insert` rejects, since they test the writer's retry logic, not the database.

import t from 'tap';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrations.js';
import { toRow, type RequestRow } from '../../src/store/rows.js';
import { BatchWriter, type WriterEvents, type WriterOptions } from '../../src/store/writer.js';
import { makeRecord } from '../../src/usage/record.js';
import { uuidv7 } from '../../src/usage/uuidv7.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const store: Store = openStore({
  clickhouse_url: '',
  database: 'tollgate',
  data_dir: tempDir(t, 'tollgate-writer-'),
  username: 'default',
  password: '',
  batch: { max_rows: 1000, flush_ms: 1000, queue_max: 100000 },
});
t.teardown(() => store.close());
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
}

function events(): { log: Log; events: WriterEvents } {
  const log: Log = { written: [], dropped: [], errors: [] };
  return {
    log,
    events: {
      written: (n) => void log.written.push(n),
      dropped: (n, reason) => void log.dropped.push([n, reason]),
      error: (_err, attempt) => void log.errors.push(attempt),
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
  };
  return { store: s as unknown as Store, calls };
}

function writer(s: Store, opts: WriterOptions, ev: WriterEvents): BatchWriter<RequestRow> {
  const w = new BatchWriter<RequestRow>(s, 'requests', opts, ev);
  t.teardown(() => w.close());
  return w;
}

t.test('flush by size: maxRows queued triggers an insert without waiting for flushMs', async (t) => {
  const { log, events: ev } = events();
  const w = writer(store, { maxRows: 5, flushMs: 60_000, queueMax: 100 }, ev);
  for (let i = 0; i < 4; i++) t.ok(w.enqueue(row('size')));
  await new Promise((r) => setTimeout(r, 150));
  t.same(log.written, [], 'four rows: below maxRows, nothing written yet');
  t.equal(w.depth, 4);
  const t0 = Date.now();
  t.ok(w.enqueue(row('size')));
  await waitFor(() => log.written.length > 0, 5000);
  t.ok(Date.now() - t0 < 5000, 'written long before flushMs (60 s)');
  t.same(log.written, [5], 'one batch of five');
  t.equal(w.depth, 0);
  t.same(await countRows('size'), { n: 5, tokens: 25 }, 'five rows in ClickHouse');
  t.same(log.dropped, []);
  t.same(log.errors, []);
});

t.test('flush by interval: fewer than maxRows are written after flushMs', async (t) => {
  const { log, events: ev } = events();
  const w = writer(store, { maxRows: 1000, flushMs: 200, queueMax: 100 }, ev);
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

  // The timer re-arms for the next row.
  t.ok(w.enqueue(row('interval')));
  await waitFor(() => log.written.length > 1, 5000);
  t.same(log.written, [3, 1]);
  t.same(await countRows('interval'), { n: 4, tokens: 20 });
});

t.test('close drains everything queued, in batches of maxRows, then refuses rows', async (t) => {
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', { maxRows: 10, flushMs: 60_000, queueMax: 1000 }, ev);
  for (let i = 0; i < 25; i++) t.ok(w.enqueue(row('drain')), `row ${i} accepted`);
  await w.close();
  t.equal(w.depth, 0, 'queue empty after close');
  t.equal(sum(log.written), 25, 'every row written');
  t.ok(log.written.every((n) => n <= 10), `no batch larger than maxRows (${log.written.join(', ')})`);
  t.same(await countRows('drain'), { n: 25, tokens: 125 }, 'all 25 in ClickHouse');
  t.same(log.dropped, []);

  t.notOk(w.enqueue(row('drain')), 'a closed writer takes no rows');
  t.same(log.dropped, [[1, 'queue_full']], 'and counts the refusal as a drop');
  await w.close(); // closing twice is harmless
  t.same(await countRows('drain'), { n: 25, tokens: 125 });
});

t.test('close drains rows queued behind an insert that is in flight', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const { store: s, calls } = standIn(async (call, table, rows) => {
    if (call === 1) await gate;
    await store.insert(table, rows);
  });
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 2, flushMs: 60_000, queueMax: 100 }, ev);
  w.enqueue(row('inflight'));
  w.enqueue(row('inflight')); // starts the first insert, which waits on the gate
  for (let i = 0; i < 5; i++) w.enqueue(row('inflight'));
  t.equal(w.depth, 5, 'five rows wait behind the in-flight batch');
  const closing = w.close();
  release();
  await closing;
  t.same(calls.map((c) => c.rows), [2, 2, 2, 1]);
  t.same(log.written, [2, 2, 2, 1]);
  t.same(await countRows('inflight'), { n: 7, tokens: 35 });
});

t.test('a full queue drops new rows and counts them', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const { store: s, calls } = standIn(() => gate);
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 100, flushMs: 60_000, queueMax: 3 }, ev);
  t.ok(w.enqueue(row('full')));
  t.ok(w.enqueue(row('full')));
  t.ok(w.enqueue(row('full')));
  t.notOk(w.enqueue(row('full')), 'fourth row refused');
  t.notOk(w.enqueue(row('full')), 'fifth row refused');
  t.equal(w.depth, 3, 'the queue never grows past queueMax');
  t.same(log.dropped, [[1, 'queue_full'], [1, 'queue_full']], 'each refused row counted as queue_full');

  const closing = w.close();
  release();
  await closing;
  t.same(calls.map((c) => c.rows), [3], 'the accepted rows are written');
  t.same(log.written, [3]);
  t.equal(sum(log.dropped.map(([n]) => n)), 2, 'accepted + dropped = offered');
});

t.test('the queue frees up as batches are taken for writing', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const { store: s } = standIn(() => gate);
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 2, flushMs: 60_000, queueMax: 2 }, ev);
  t.ok(w.enqueue(row('free')));
  t.ok(w.enqueue(row('free')), 'second row fills the queue and starts an insert');
  t.equal(w.depth, 0, 'the batch left the queue when its insert started');
  t.ok(w.enqueue(row('free')));
  t.ok(w.enqueue(row('free')));
  t.notOk(w.enqueue(row('free')));
  t.same(log.dropped, [[1, 'queue_full']]);
  const closing = w.close();
  release();
  await closing;
  t.same(log.written, [2, 2]);
});

t.test('an insert that keeps failing is retried with backoff, then dropped and counted', async (t) => {
  let down = true;
  const { store: s, calls } = standIn(() => (down ? Promise.reject(new Error('ClickHouse is down')) : Promise.resolve()));
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 4, flushMs: 60_000, queueMax: 100, retries: 3, retryBaseMs: 20 }, ev);
  for (let i = 0; i < 4; i++) w.enqueue(row('failing'));
  await w.flush();
  t.equal(calls.length, 4, 'one attempt and three retries');
  t.same(log.errors, [1, 2, 3, 4], 'each failed attempt reported with its number');
  t.same(log.dropped, [[4, 'insert_failed']], 'the whole batch dropped once, as insert_failed');
  t.same(log.written, []);
  const gaps = calls.slice(1).map((c, i) => c.at - calls[i]!.at);
  t.ok(gaps[0]! >= 15 && gaps[1]! >= 35 && gaps[2]! >= 75, `exponential backoff 20, 40, 80 ms (got ${gaps.join(', ')})`);
  t.equal(w.depth, 0);

  // The writer keeps working once the store is back.
  down = false;
  t.ok(w.enqueue(row('failing')));
  await w.close();
  t.same(log.written, [1]);
  t.equal(calls.length, 5);
  t.same(log.dropped, [[4, 'insert_failed']], 'nothing more dropped');
});

t.test('retries: 0 drops on the first failure', async (t) => {
  const { store: s, calls } = standIn(() => Promise.reject(new Error('nope')));
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 10, flushMs: 60_000, queueMax: 100, retries: 0 }, ev);
  w.enqueue(row('noretry'));
  w.enqueue(row('noretry'));
  await w.close();
  t.equal(calls.length, 1);
  t.same(log.errors, [1]);
  t.same(log.dropped, [[2, 'insert_failed']]);
});

t.test('a batch whose insert fails once then succeeds is written once and counted once', async (t) => {
  // The first attempt reaches ClickHouse but the acknowledgement is lost (the worst case for double counting):
  // the rows are in, the writer sees an error and sends the same batch again.
  const { store: s, calls } = standIn(async (call, table, rows, token) => {
    await store.insert(table, rows, token);
    if (call === 1) throw new Error('socket hang up after the server stored the rows');
  });
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 6, flushMs: 60_000, queueMax: 100, retries: 3, retryBaseMs: 10 }, ev);
  for (let i = 0; i < 6; i++) w.enqueue(row('retried'));
  await w.flush();
  t.equal(calls.length, 2, 'one failure, one retry');
  t.same(log.errors, [1]);
  t.same(log.written, [6], 'written reported once, for the whole batch');
  t.same(log.dropped, []);
  t.same(await countRows('retried'), { n: 6, tokens: 30 }, 'six rows in ClickHouse, not twelve');
  t.equal(calls[1]!.token, calls[0]!.token, 'the retry carries the same deduplication token');
  const rolled = await store.query<{ rows: string; tokens: string }>(
    `SELECT sum(rows) AS rows, sum(total_tokens) AS tokens FROM ${store.t('usage_hourly')} WHERE api_key_name = 'retried'`,
  );
  t.same(rolled.map((r) => [Number(r.rows), Number(r.tokens)]), [[6, 30]], 'and the hourly rollup counted the batch once');
  await w.close();
});

t.test('a batch that fails before reaching the store and then succeeds is written once', async (t) => {
  const { store: s, calls } = standIn(async (call, table, rows) => {
    if (call <= 2) throw new Error('connection refused');
    await store.insert(table, rows);
  });
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 3, flushMs: 60_000, queueMax: 100, retries: 3, retryBaseMs: 5 }, ev);
  for (let i = 0; i < 3; i++) w.enqueue(row('late'));
  await w.flush();
  t.equal(calls.length, 3);
  t.same(log.errors, [1, 2]);
  t.same(log.written, [3]);
  t.same(log.dropped, []);
  t.same(await countRows('late'), { n: 3, tokens: 15 });
  await w.close();
});

t.test('under steady load, inserts are few and large: one per flush interval, not one per insert round trip', async (t) => {
  // Each insert takes 20 ms; rows arrive every 2 ms for 1 s. A writer that re-flushes whatever arrived during the
  // previous insert would make ~50 small inserts; batching by size or interval makes about 1000/200 = 5.
  const { store: s, calls } = standIn(() => new Promise((r) => setTimeout(r, 20)));
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(s, 'requests', { maxRows: 1000, flushMs: 200, queueMax: 100000 }, ev);
  const end = Date.now() + 1000;
  let sent = 0;
  while (Date.now() < end) {
    w.enqueue(row('steady'));
    sent++;
    await new Promise((r) => setTimeout(r, 2));
  }
  await w.close();
  t.equal(log.written.reduce((a, n) => a + n, 0), sent, 'every row written');
  t.ok(calls.length <= 8, `${calls.length} inserts for ${sent} rows`);
  t.ok(sent / calls.length >= 40, `about ${Math.round(sent / calls.length)} rows per insert`);
});
