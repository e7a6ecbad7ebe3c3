// Migrations are idempotent: a store whose schema_migrations lost its records (a disk error and fsck took the last
// parts, as in embedded-disk-readonly.test.ts) runs every migration again over its own tables and data, and must
// open, counting nothing twice. Migration 3's backfill names its columns: the rollup has gained columns since
// (unpriced_rows, migration 22), and an insert by position would no longer fit it.

import t from 'tap';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'rerun', prefix: 'tollgate-rerun-' });

const T0 = Date.UTC(2026, 2, 10, 9);
const rows = Array.from({ length: 40 }, (_, i) => {
  const at = T0 + i * 17 * 60_000;
  return toRow(makeRecord({
    requestId: uuidv7(at), startedAt: at, endedAt: at + 50, endpoint: 'chat.completions', provider: 'p', providerGroup: 'paid',
    model: 'p/m', requestedModel: 'm', modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 10, cached: null, cacheWrite: null, output: 5, reasoning: null }, usageSource: 'reported',
    cost: i % 4 === 0 ? { cost: 0, listCost: 0, priceSource: 'none' } : { cost: 0.002, listCost: 0.002, priceSource: 'config' },
    latency: { kind: 'unary', totalMs: 50 }, upstreamMs: 40,
  }));
});

const sums = async () => {
  const [r] = await store.query<{ raw: string; hourly: string; daily: string; unpriced: string; dailyUnpriced: string; tokens: string }>(
    `SELECT (SELECT count() FROM ${store.t('requests')} FINAL) AS raw,
            (SELECT sum(rows) FROM ${store.t('usage_hourly')}) AS hourly,
            (SELECT sum(rows) FROM ${store.t('usage_daily')}) AS daily,
            (SELECT sum(unpriced_rows) FROM ${store.t('usage_hourly')}) AS unpriced,
            (SELECT sum(unpriced_rows) FROM ${store.t('usage_daily')}) AS dailyUnpriced,
            (SELECT sum(total_tokens) FROM ${store.t('usage_hourly')}) AS tokens`,
  );
  return { raw: Number(r!.raw), hourly: Number(r!.hourly), daily: Number(r!.daily), unpriced: Number(r!.unpriced), dailyUnpriced: Number(r!.dailyUnpriced), tokens: Number(r!.tokens) };
};

t.test('every migration run again over a migrated store with rows: it opens, and nothing is counted twice', async (t) => {
  t.same(await migrate(store), MIGRATIONS.map((m) => m.version).sort((a, b) => a - b), 'a fresh store: every migration');
  await store.insert('requests', rows, 'rerun-batch-1');
  const before = await sums();
  t.same(before, { raw: 40, hourly: 40, daily: 40, unpriced: 10, dailyUnpriced: 10, tokens: 600 }, 'the rollups count the rows once');

  await store.command(`ALTER TABLE ${store.t('schema_migrations')} DELETE WHERE 1 SETTINGS mutations_sync = 2`);
  const again = await migrate(store);
  t.same(again, MIGRATIONS.map((m) => m.version).sort((a, b) => a - b), 'with its records gone, every migration runs again, and succeeds');
  t.same(await sums(), before, 'the backfills of the rerun are dropped by their tokens: the rollups are unchanged');
  t.same(await migrate(store), [], 'and the records are back');
});
