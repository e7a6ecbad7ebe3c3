// The hourly rollup (migration 3): rows already in `requests` when the migration runs are aggregated once by its
// backfill (even when two replicas run the migration at the same moment), rows written afterwards once by the materialized view, and a retried batch (same deduplication token)
// is counted once in both tables. The rollup's sums equal the raw table's (FINAL) for every hour and dimension.

import t from 'tap';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'cutover', prefix: 'tollgate-rollup-' });

const H = 3_600_000;
const T0 = Date.UTC(2026, 1, 28, 22, 30); // 2026-02-28 22:30Z: rows straddle an hour, a day and a month edge
let seq = 0;
function row(offsetMs: number, opts: { kind?: RecordKind; provider?: string; tokens?: number; cost?: number } = {}) {
  const startedAt = T0 + offsetMs;
  const tokens = opts.tokens ?? 10;
  return toRow(makeRecord({
    kind: opts.kind ?? 'request', requestId: uuidv7(startedAt + seq++), startedAt, endedAt: startedAt + 100, endpoint: 'chat.completions',
    provider: opts.provider ?? 'p', providerGroup: 'paid', model: `${opts.provider ?? 'p'}/m`, requestedModel: 'm', modelKnown: true, apiKeyName: 'k',
    stream: false, status: 'success', httpStatus: 200, errorType: '', usage: { input: tokens - 4, cached: null, cacheWrite: null, output: 4, reasoning: null },
    usageSource: 'reported', cost: { cost: opts.cost ?? 0.001, listCost: opts.cost ?? 0.001 }, latency: { kind: 'unary', totalMs: 100 }, upstreamMs: 90,
  }));
}

const byHour = async (table: 'raw' | 'rollup') => {
  const sql = table === 'raw'
    ? `SELECT toStartOfHour(ts) AS h, provider, count() AS n, sum(total_tokens) AS tok, toString(sum(cost)) AS cost FROM ${store.t('requests')} FINAL GROUP BY h, provider ORDER BY h, provider`
    : `SELECT hour AS h, provider, sum(rows) AS n, sum(total_tokens) AS tok, toString(sum(cost)) AS cost FROM ${store.t('usage_hourly')} GROUP BY h, provider ORDER BY h, provider`;
  return (await store.query<{ h: string; provider: string; n: string; tok: string; cost: string }>(sql)).map((r) => [r.h, r.provider, Number(r.n), Number(r.tok), Number(r.cost)]);
};

t.test('the cut-over: history backfilled once, new rows through the view once', async (t) => {
  await migrate(store, MIGRATIONS.filter((m) => m.version < 3));
  // History: 5 rows before the rollup exists, one of them inserted twice (a retried insert the raw table dedupes).
  const history = [row(-40 * 60_000), row(-1), row(0), row(29 * 60_000 + 59_999, { provider: 'q', tokens: 20 }), row(H, { cost: 0.5 })];
  await store.insert('requests', history);
  await store.insert('requests', [history[0]!]);
  // Two replicas start at once: both see the migration pending and both run it, backfill included.
  const [first, second] = await Promise.all([migrate(store), migrate(store)]);
  t.same([first[0], second[0]], [3, 3], 'the rollup migration applies now (and any later ones), in both replicas');

  // After the cut-over: new rows, one batch retried with its token.
  const fresh = [row(2 * H), row(2 * H + 1, { provider: 'q' }), row(-2 * H)];
  await store.insert('requests', fresh, 'batch-1');
  await store.insert('requests', fresh, 'batch-1'); // the retry of a batch whose acknowledgement was lost
  await store.insert('requests', [row(2 * H + 2)], 'batch-2');

  const raw = await byHour('raw');
  t.same(await byHour('rollup'), raw, 'the rollup agrees with the raw table, hour by hour and provider by provider');
  const total = raw.reduce((s, r) => s + (r[2] as number), 0);
  t.equal(total, 9, '5 history rows + 3 fresh + 1: nothing twice');
  t.same(raw.map((r) => r[0]), ['2026-02-28 20:00:00', '2026-02-28 21:00:00', '2026-02-28 22:00:00', '2026-02-28 22:00:00', '2026-02-28 23:00:00', '2026-03-01 00:00:00', '2026-03-01 00:00:00']);
  const [{ n }] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('requests')}`);
  t.equal(Number(n) >= 9 && Number(n) <= 10, true, `the raw table holds each row once (${n}; at most the history duplicate awaits its merge)`);
  const [min] = await store.query<{ m: string }>(`SELECT toString(min(min_ts)) AS m FROM ${store.t('usage_hourly')} WHERE provider = 'q'`);
  t.equal(min?.m, '2026-02-28 22:59:59.999', 'min_ts keeps the exact oldest timestamp of an hour');
});

t.test('aggregate(): rollup hours plus raw edges equal the raw rows for any window, grouping and filter', async (t) => {
  const { aggregate, total } = await import('../../src/store/aggregate.js');
  const rawSum = async (from: number, to: number, extra = '1') => {
    const [r] = await store.query<{ n: string; tok: string; cost: string; oldest: string | null }>(
      `SELECT count() AS n, sum(total_tokens) AS tok, toString(sum(cost)) AS cost, toUnixTimestamp64Milli(min(ts)) AS oldest FROM ${store.t('requests')} FINAL
       WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC') AND ${extra}`,
      { from, to },
    );
    return { rows: Number(r!.n), tokens: Number(r!.tok), cost: Number(r!.cost), oldest: Number(r!.n) === 0 ? null : Number(r!.oldest) };
  };
  const edges = [-3 * H, -2 * H - 1, -40 * 60_000, -1, 0, 1, 29 * 60_000, H - 1, H, H + 1, 2 * H, 2 * H + 1, 2 * H + 3, 3 * H];
  let checked = 0;
  for (const x of edges) {
    for (const y of edges) {
      if (y <= x) continue;
      const got = await total(store, { from: T0 + x, to: T0 + y });
      const want = await rawSum(T0 + x, T0 + y);
      if (got.rows !== want.rows || got.tokens !== want.tokens || Math.abs(got.cost - want.cost) > 1e-12 || got.oldest !== want.oldest) {
        t.fail(`window [${x}, ${y}): ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
      }
      checked++;
    }
  }
  t.equal(checked, (edges.length * (edges.length - 1)) / 2, `${checked} windows agree with the raw rows`);

  const byProvider = await aggregate(store, { from: T0 - 3 * H, to: T0 + 3 * H, by: ['provider'], filters: { kinds: ['request'] } });
  t.same(byProvider.map((g) => [g.provider, g.rows]), [['p', 7], ['q', 2]]);
  const onlyQ = await total(store, { from: T0 - 3 * H, to: T0 + 3 * H, filters: { provider: 'q' } });
  t.same([onlyQ.rows, onlyQ.tokens], [2, 30]);
  const daysInTokyo = await aggregate(store, { from: T0 - 3 * H, to: T0 + 3 * H, by: ['day'], tz: 'Asia/Tokyo' });
  t.same(daysInTokyo.map((g) => [g.day, g.rows]), [['2026-03-01', 9]], 'in Tokyo (+09:00) every row falls on March 1st');
  const days = await aggregate(store, { from: T0 - 3 * H, to: T0 + 3 * H, by: ['day'] });
  t.same(days.map((g) => [g.day, g.rows]), [['2026-02-28', 6], ['2026-03-01', 3]], 'in UTC the month edge splits them');
});

