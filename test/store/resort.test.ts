// Migration 8 rebuilds `requests` sorted by (toStartOfHour(ts), request_id), so that a time range reads its hours
// rather than whole days. The rows are kept (each once), the hourly rollup is not counted again, the materialized
// view keeps firing on the new table, a range read touches only its hours (EXPLAIN), and a run that stopped after
// the exchange does not exchange back. resort.server.test.ts runs the same on the server path.

import t from 'tap';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'resort', prefix: 'tollgate-resort-' });

const H = 3_600_000;
const T0 = Date.UTC(2026, 2, 10, 0, 0);
let seq = 0;
function row(at: number) {
  return toRow(makeRecord({
    kind: 'request', requestId: uuidv7(at + seq++), startedAt: at, endedAt: at + 100, endpoint: 'chat.completions',
    provider: 'p', providerGroup: 'paid', model: 'p/m', requestedModel: 'm', modelKnown: true, apiKeyName: 'k',
    stream: false, status: 'success', httpStatus: 200, errorType: '', usage: { input: 6, cached: null, cacheWrite: null, output: 4, reasoning: null },
    usageSource: 'reported', cost: { cost: 0.001, listCost: 0.001 }, latency: { kind: 'unary', totalMs: 100 }, upstreamMs: 90,
  }));
}

const sortingKey = async () => (await store.query<{ k: string }>(`SELECT sorting_key AS k FROM system.tables WHERE database = 'resort' AND name = 'requests'`))[0]?.k;
const counts = async () => {
  const [raw] = await store.query<{ n: string; tok: string }>(`SELECT count() AS n, sum(total_tokens) AS tok FROM ${store.t('requests')} FINAL`);
  const [rollup] = await store.query<{ n: string; tok: string }>(`SELECT sum(rows) AS n, sum(total_tokens) AS tok FROM ${store.t('usage_hourly')}`);
  return { raw: [Number(raw!.n), Number(raw!.tok)], rollup: [Number(rollup!.n), Number(rollup!.tok)] };
};

t.test('the rebuild keeps every row once, the rollup as it was, and the view on the new table', async (t) => {
  await migrate(store, MIGRATIONS.filter((m) => m.version < 8));
  t.equal(await sortingKey(), 'toDate(ts), request_id', 'before: sorted by day');
  // 48 hours of rows, 30 a hour, in separate parts; one batch inserted twice (a retry the table dedupes).
  const rows = Array.from({ length: 48 * 30 }, (_, i) => row(T0 + Math.floor(i / 30) * H + (i % 30) * 60_000));
  for (let h = 0; h < 48; h += 8) await store.insert('requests', rows.slice(h * 30, (h + 8) * 30), `batch-${h}`);
  await store.insert('requests', rows.slice(0, 30));
  const before = await counts();
  t.same(before.raw, [1440, 14400], 'the raw rows, each once');

  t.same(await migrate(store, MIGRATIONS.filter((m) => m.version <= 8)), [8], 'migration 8 applied');
  t.equal(await sortingKey(), 'toStartOfHour(ts), request_id', 'after: sorted by hour');
  const after = await counts();
  t.same(after.raw, before.raw, 'every row kept, each once');
  t.same(after.rollup, before.rollup, 'the rollup is not counted again');
  const left = await store.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = 'resort' AND name = 'requests_v8'`);
  t.same(left, [], 'the old copy is dropped');

  await store.insert('requests', [row(T0 + 50 * H)], 'after-the-rebuild');
  const later = await counts();
  t.same(later.raw, [1441, 14410], 'a new row lands in the new table');
  t.same(later.rollup, [before.rollup[0]! + 1, before.rollup[1]! + 10], 'and the view adds it to the rollup');
});

t.test('a one-hour range reads one hour of granules, not the day', async (t) => {
  await store.command(`OPTIMIZE TABLE ${store.t('requests')} FINAL`);
  const explain = await store.query<{ explain: string }>(
    `EXPLAIN indexes = 1 SELECT count() FROM ${store.t('requests')}
     WHERE ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({b:Int64}, 'UTC')`,
    { a: T0 + 5 * H, b: T0 + 6 * H },
  );
  const text = explain.map((r) => r.explain).join('\n');
  t.match(text, /PrimaryKey[\s\S]*Condition: .*toStartOfHour\(ts\)/, 'the primary key (the hour) is used');
  const [rows] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${store.t('requests')} WHERE ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({b:Int64}, 'UTC')
     SETTINGS max_rows_to_read = 8192, read_overflow_mode = 'throw', force_primary_key = 1`,
    { a: T0 + 5 * H, b: T0 + 6 * H },
  );
  t.equal(Number(rows!.n), 30, 'the hour is read within one granule of rows (2 days of rows would exceed the limit)');
});

t.test('a run that stopped after the exchange does not exchange back', async (t) => {
  // As if the process died after the exchange and before the version's row was written.
  await store.command(`ALTER TABLE ${store.t('schema_migrations')} DELETE WHERE version = 8 SETTINGS mutations_sync = 2`);
  const before = await counts();
  t.same(await migrate(store, MIGRATIONS.filter((m) => m.version <= 8)), [8], 'the version is recorded again');
  t.equal(await sortingKey(), 'toStartOfHour(ts), request_id', 'still sorted by hour');
  t.same(await counts(), before, 'nothing copied or counted twice');
  t.same((await migrate(store)).filter((v) => v <= 8), [], 'later migrations apply to the rebuilt table, nothing before them again');
});
