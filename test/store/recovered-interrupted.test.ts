// A request an earlier process left in flight is recorded as interrupted (its begin marker in the spool, no row),
// unless the store holds its row already: with a full disk the row went to the store from memory (the spool's memory
// segment) while its marker stayed on the disk, and the next start recorded the request as interrupted over its
// stored row (ReplacingMergeTree keeps the last one inserted: the answered, billed request read as interrupted with 0
// tokens). The writer now asks the store first (WriterOptions.storedOf) and the spool writes only the others
// (Spool.settleRecovered), before any leftover segment goes in.

import t from 'tap';
import { migrate } from '../../src/store/migrations.js';
import { rowsSpan, storedRequests } from '../../src/store/rollup-repair.js';
import { REQUEST_COLUMNS, type RequestRow } from '../../src/store/rows.js';
import { Spool } from '../../src/store/spool.js';
import { BatchWriter } from '../../src/store/writer.js';
import { openTestStore } from '../helpers/store-paths.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';
import { leftoversRead } from '../helpers/spool.js';

const store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-recovered-' });
await migrate(store);

t.test('a request in flight whose row the store holds is not recorded as interrupted over it', async (t) => {
  const dir = tempDir(t, 'tollgate-recovered-spool-');
  const opts = { dir, commitMs: 20, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS };
  const idOf = (r: RequestRow) => String(r.request_id);
  const stored = rec({ at: '2026-11-20T09:00:00.000Z', model: 'paid/m', key: 'recovered', usage: [7, 5], cost: 0.25 });
  const lost = rec({ at: '2026-11-20T09:00:01.000Z', model: 'paid/m', key: 'recovered', usage: [3, 0] });
  const asInterrupted = (r: RequestRow): RequestRow => ({ ...r, status: 'interrupted', total_tokens: 0, output_tokens: 0, cost: '0.000000000000' });

  // The first process: both requests begun (their markers on disk); the first one's row reached the store without
  // reaching the disk (what a memory segment's insert does while the disk is full); then it stopped.
  const first = new Spool<RequestRow>(opts, idOf);
  first.begin(stored.request_id, () => asInterrupted(stored));
  first.begin(lost.request_id, () => asInterrupted(lost));
  await new Promise((r) => setImmediate(r));
  await store.insert('requests', [stored], 'memory-segment');
  first.close();

  const second = new Spool<RequestRow>(opts, idOf);
  t.equal((await leftoversRead(second)).interrupted, 2, 'both markers found');
  const asked: string[][] = [];
  const writer = new BatchWriter<RequestRow>(store, 'requests', second, {
    maxRows: 100, flushMs: 60_000,
    storedOf: (ids, rows) => {
      asked.push([...ids].sort());
      return storedRequests(store, ids, rowsSpan(rows));
    },
  }, { written: () => undefined, dropped: () => undefined, error: () => undefined, state: () => undefined });
  await writer.flush();
  t.same(asked, [[stored.request_id, lost.request_id].sort()], 'the store asked once, about both');
  const rows = await store.query<{ id: string; status: string; tokens: string | number; n: string | number }>(
    `SELECT toString(request_id) AS id, status, total_tokens AS tokens, count() OVER (PARTITION BY request_id) AS n
     FROM ${store.t('requests')} FINAL WHERE api_key_name = 'recovered' ORDER BY ts`,
  );
  t.same(rows.map((r) => [r.id, r.status, Number(r.tokens)]), [[stored.request_id, 'success', 12], [lost.request_id, 'interrupted', 0]],
    'the stored row stands; the request with no row is recorded as interrupted');
  const [raw] = await store.query<{ n: string | number }>(`SELECT count() AS n FROM ${store.t('requests')} WHERE toString(request_id) = {id:String}`, { id: stored.request_id });
  t.equal(Number(raw!.n), 1, 'and no second row of it was inserted (the rollups count it once)');
  t.equal(second.rows, 0, 'nothing left in the spool');
  await writer.close();
});

t.test('a stop right after the start still records the requests left in flight', async (t) => {
  // The writer asks the store as it starts; a close (SIGTERM) that begins while it asks must not lose them: the rows go
  // to the spool itself, which stays open until the close's last insert.
  const dir = tempDir(t, 'tollgate-recovered-stop-');
  const opts = { dir, commitMs: 20, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS };
  const idOf = (r: RequestRow) => String(r.request_id);
  const cut = rec({ at: '2026-11-20T10:00:00.000Z', model: 'paid/m', key: 'recovered-stop', usage: [4, 1] });
  const first = new Spool<RequestRow>(opts, idOf);
  first.begin(cut.request_id, () => ({ ...cut, status: 'interrupted' }));
  await new Promise((r) => setImmediate(r));
  first.close();
  const dropped: number[] = [];
  const writer = new BatchWriter<RequestRow>(store, 'requests', new Spool<RequestRow>(opts, idOf), {
    maxRows: 100, flushMs: 60_000, storedOf: (ids, rows) => storedRequests(store, ids, rowsSpan(rows)),
  }, { written: () => undefined, dropped: (n) => void dropped.push(n), error: () => undefined, state: () => undefined });
  await writer.close();
  const rows = await store.query<{ status: string }>(`SELECT status FROM ${store.t('requests')} FINAL WHERE api_key_name = 'recovered-stop'`);
  t.same(rows.map((r) => r.status), ['interrupted'], 'recorded as interrupted by the close');
  t.same(dropped, [], 'nothing dropped');
});
