// Migration 28: whether a row's request went out upstream (`dispatched`), counted in both rollups (`dispatched_rows`),
// and what the quota's reads count for a request quota. A store the code before made (rows without the column, rollup
// rows without the count) opens, and its rows count as they did: dispatched. Rows written after are counted by the
// views, a retried batch once; the reads (aggregate, the quota's windows, the kept first hours of rolling windows)
// give the raw rows' count of dispatched rows for any window. dispatched.server.test.ts runs the same on the server
// path.

import t from 'tap';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { total } from '../../src/store/aggregate.js';
import { providerWindows } from '../../src/store/quota-windows.js';
import { EdgeCache } from '../../src/store/quota-edges.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'dispatched', prefix: 'tollgate-dispatched-' });

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.UTC(2026, 5, 10); // 2026-06-10 00:00Z
let seq = 0;
function row(at: number, opts: { kind?: RecordKind; provider?: string; dispatched?: boolean } = {}) {
  seq++;
  return toRow(makeRecord({
    kind: opts.kind ?? 'request', requestId: uuidv7(at + seq), startedAt: at, endedAt: at + 100, endpoint: 'chat.completions',
    provider: opts.provider ?? 'p', providerGroup: 'paid', model: `${opts.provider ?? 'p'}/m${seq % 2}`, requestedModel: 'm', modelKnown: true,
    apiKeyName: 'k', stream: false, status: opts.dispatched === false ? 'failure' : 'success', httpStatus: opts.dispatched === false ? 400 : 200,
    errorType: opts.dispatched === false ? 'TOLLGATE_ERR_NOT_SUPPORTED' : '',
    usage: { input: 6, cached: null, cacheWrite: null, output: 4, reasoning: null }, usageSource: 'reported',
    cost: { cost: 0.001, listCost: 0.001, priceSource: 'config' }, latency: { kind: 'unary', totalMs: 100 }, upstreamMs: 90,
    ...(opts.dispatched === undefined ? {} : { dispatched: opts.dispatched }),
  }));
}

/** Rows every 23 minutes over [start, start + hours): two providers, every third an attempt, every `refusedEvery`-th not dispatched. */
function spread(start: number, hours: number, refusedEvery = 0) {
  const out: ReturnType<typeof row>[] = [];
  for (let x = start; x < start + hours * H; x += 23 * 60_000) {
    const i = out.length;
    out.push(row(x, { provider: i % 2 === 0 ? 'p' : 'q', kind: i % 3 === 0 ? 'attempt' : 'request', ...(refusedEvery > 0 ? { dispatched: i % refusedEvery !== 0 } : {}) }));
  }
  return out;
}

/** The raw rows (each once) in [from, to): all of them, and those dispatched; `provider` alone when given. */
const raw = async (from: number, to: number, provider?: string) => {
  const [r] = await store.query<{ n: string; d: string }>(
    `SELECT count() AS n, countIf(dispatched) AS d FROM ${store.t('requests')} FINAL
     WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
       AND ({p:String} = '' OR provider = {p:String}) AND kind IN ('request', 'attempt')`,
    { from, to, p: provider ?? '' },
  );
  return { rows: Number(r!.n), dispatched: Number(r!.d) };
};
const byDay = (table: 'usage_hourly' | 'usage_daily') => store.query(
  `SELECT toString(${table === 'usage_hourly' ? 'toStartOfDay(hour)' : 'day'}) AS d, provider, kind, sum(rows) AS n, sum(dispatched_rows) AS dispatched
   FROM ${store.t(table)} GROUP BY d, provider, kind ORDER BY d, provider, kind`,
);

t.test('a store made before migration 28 opens; its rows and rollup rows count as dispatched', async (t) => {
  await migrate(store, MIGRATIONS.filter((m) => m.version < 28));
  // Rows as the code before wrote them: no `dispatched` column.
  const history = spread(T0 - D - 2 * H, 40).map(({ dispatched: _d, ...rest }) => rest);
  await store.insert('requests', history, 'history');
  t.same(await migrate(store), [28], 'migration 28 applied');
  t.same(await migrate(store), [], 'once');
  const [cols] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM system.columns WHERE database = {db:String} AND table = 'requests' AND name = 'dispatched' AND type = 'Bool'`, { db: store.database },
  );
  t.equal(Number(cols!.n), 1, 'requests has the Bool column');
  const all = await raw(0, T0 + 30 * D);
  t.same(all, { rows: history.length, dispatched: history.length }, 'every row written before reads as dispatched');
  for (const table of ['usage_hourly', 'usage_daily'] as const) {
    const [s] = await store.query<{ n: string; d: string }>(`SELECT sum(rows) AS n, sum(dispatched_rows) AS d FROM ${store.t(table)}`);
    t.same([Number(s!.n), Number(s!.d)], [history.length, history.length], `${table}: its rows before the migration count as dispatched`);
  }
  const sums = await total(store, { from: T0 - D - 90 * 60_000, to: T0 + 13 * H + 7 });
  t.equal(sums.dispatched, sums.rows, 'a read across raw edges, hours and days: every row dispatched');
});

t.test('rows written after: the views count the dispatched ones, a retried batch once; daily = hourly', async (t) => {
  const fresh = spread(T0 + 14 * H + 5 * 60_000, 60, 5);
  await store.insert('requests', fresh.slice(0, 100), 'fresh-1');
  await store.insert('requests', fresh.slice(0, 100), 'fresh-1'); // the retry of a batch whose acknowledgement was lost
  await store.insert('requests', fresh.slice(100), 'fresh-2');
  const refused = fresh.filter((r) => r.dispatched === false).length;
  t.ok(refused > 20, `rows refused before their call (${refused})`);
  const want = await raw(0, T0 + 30 * D);
  t.equal(want.rows - want.dispatched, refused, 'the raw rows hold them');
  const [s] = await store.query<{ n: string; d: string }>(`SELECT sum(rows) AS n, sum(dispatched_rows) AS d FROM ${store.t('usage_hourly')}`);
  t.same([Number(s!.n), Number(s!.d)], [want.rows, want.dispatched], 'the hourly rollup: every row once, the dispatched ones counted');
  t.same(await byDay('usage_daily'), await byDay('usage_hourly'), 'the daily rollup is the sum of its hours');
});

t.test('the reads count the dispatched rows of any window: aggregate, the quota\'s windows, kept first hours', async (t) => {
  const edges = [T0 - D - H - 1, T0 - 30 * 60_000, T0, T0 + 14 * H + 17, T0 + D, T0 + D + 5 * H + 30 * 60_000, T0 + 3 * D + 1];
  for (const x of edges) {
    for (const y of edges) {
      if (y <= x) continue;
      const got = await total(store, { from: x, to: y, filters: { kinds: ['request', 'attempt'] } });
      const want = await raw(x, y);
      t.same([got.rows, got.dispatched], [want.rows, want.dispatched], `[${(x - T0) / H} h, ${(y - T0) / H} h)`);
    }
  }

  const now = T0 + 2 * D + 9 * H + 7;
  const mid = T0 + 2 * D + 4 * H + 17 * 60_000; // a rolling window's start
  const hourEnd = Math.ceil(mid / H) * H;
  const cache = new EdgeCache();
  const read = async () => (await providerWindows(store, {
    start: T0 - D, to: now, today: T0 + 2 * D, month: T0 - D, kinds: ['request', 'attempt'], edgeCache: cache,
    windows: [
      { provider: 'p', from: T0 + 2 * H, to: now, secondary: { from: T0 - D, to: now } }, // a daily reset at 02:00 and its month
      { provider: 'q', from: hourEnd, to: now },
    ],
    edges: [{ provider: 'q', from: mid, to: hourEnd }],
  })).groups;
  for (const pass of ['first read (the partial hour filled)', 'second read (the partial hour kept)']) {
    const groups = await read();
    const of = (provider: string, k: 'rows' | 'dispatched' | 'secondaryCalls') => groups.filter((g) => g.provider === provider).reduce((n, g) => n + g[k], 0);
    const p = await raw(T0 + 2 * H, now, 'p');
    const q = await raw(mid, now, 'q');
    t.ok(p.rows > p.dispatched && q.rows > q.dispatched, 'both windows hold rows refused before their call');
    t.same([of('p', 'rows'), of('p', 'dispatched')], [p.rows, p.dispatched], `${pass}: p's day from 02:00`);
    t.equal(of('p', 'secondaryCalls'), (await raw(T0 - D, now, 'p')).dispatched, `${pass}: p's month counts its dispatched rows`);
    t.same([of('q', 'rows'), of('q', 'dispatched')], [q.rows, q.dispatched], `${pass}: q's rolling window from mid-hour`);
  }
});
