// Reads at scale (issue 17). Migration 22: the hourly rollup counts the rows of unknown cost (paid, no price anywhere,
// tokens spent), the rows written before it by a backfill that changes no other sum, the rows written after it by
// the view. Migration 23: the daily rollup, backfilled from the hourly one and fed by a view on it, so a day is always
// the sum of its hours (a retried batch counted once in both). aggregate(), aggregateWindows() and providerWindows()
// read whole UTC days from it and still equal the raw rows for windows over several days, with edges on and off
// midnights and hours. rollup-daily.server.test.ts runs the same on the server path.

import t from 'tap';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { aggregate, aggregateWindows, total } from '../../src/store/aggregate.js';
import { providerWindows as readWindows } from '../../src/store/quota-windows.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';

/** The quota's read, its groups only (its every-provider cost, the budget's spend, is checked below). */
const providerWindows = async (...args: Parameters<typeof readWindows>) => (await readWindows(...args)).groups;

const store = await openTestStore(t, { database: 'daily', prefix: 'tollgate-daily-' });

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.UTC(2026, 2, 10); // 2026-03-10 00:00Z
let seq = 0;
function row(at: number, opts: { kind?: RecordKind; provider?: string; unpriced?: boolean; tokens?: number } = {}) {
  const tokens = opts.tokens ?? 10 + (seq % 7);
  return toRow(makeRecord({
    kind: opts.kind ?? 'request', requestId: uuidv7(at + seq++), startedAt: at, endedAt: at + 100, endpoint: 'chat.completions',
    provider: opts.provider ?? 'p', providerGroup: 'paid', model: `${opts.provider ?? 'p'}/m${seq % 2}`, requestedModel: 'm', modelKnown: true,
    apiKeyName: 'k', stream: false, status: seq % 5 === 0 ? 'failure' : 'success', httpStatus: 200, errorType: '',
    usage: { input: tokens - 4, cached: null, cacheWrite: null, output: 4, reasoning: null }, usageSource: 'reported',
    cost: opts.unpriced ? { cost: 0, listCost: 0, priceSource: 'none' } : { cost: 0.001 * (seq % 3), listCost: 0.002, priceSource: 'config' },
    latency: { kind: 'unary', totalMs: 100 + seq }, upstreamMs: 90,
  }));
}

/** Rows every 37 minutes over [start, start + hours), every fourth unpriced, every third an attempt, two providers. */
function spread(start: number, hours: number) {
  const out: ReturnType<typeof row>[] = [];
  for (let x = start; x < start + hours * H; x += 37 * 60_000) {
    const i: number = out.length;
    out.push(row(x, { unpriced: i % 4 === 0, kind: i % 3 === 0 ? 'attempt' : 'request', provider: i % 2 === 0 ? 'p' : 'q' }));
  }
  return out;
}

const raw = async (from: number, to: number) => {
  const [r] = await store.query<{ n: string; tok: string; cost: string; oldest: string; unpriced: string }>(
    `SELECT count() AS n, sum(total_tokens) AS tok, toString(sum(cost)) AS cost, toUnixTimestamp64Milli(min(ts)) AS oldest,
       countIf(provider_group = 'paid' AND price_source = 'none' AND total_tokens > 0) AS unpriced
     FROM ${store.t('requests')} FINAL
     WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')`,
    { from, to },
  );
  return { rows: Number(r!.n), tokens: Number(r!.tok), cost: Number(r!.cost), oldest: Number(r!.n) === 0 ? null : Number(r!.oldest), unpriced: Number(r!.unpriced) };
};
const byDay = async (table: 'usage_hourly' | 'usage_daily') => {
  const col = table === 'usage_hourly' ? 'toStartOfDay(hour)' : 'day';
  return store.query(
    `SELECT toString(${col}) AS d, provider, kind, sum(rows) AS n, sum(total_tokens) AS tok, toString(sum(cost)) AS cost,
       sum(unpriced_rows) AS unpriced, toString(min(min_ts)) AS oldest
     FROM ${store.t(table)} GROUP BY d, provider, kind ORDER BY d, provider, kind`,
  );
};

/** The raw rows of `provider` (requests and attempts: the kinds the quota reads here count) starting in [a, b). */
const rawOf = async (provider: string, a: number, b: number) => Number((await store.query<{ n: string }>(
  `SELECT count() AS n FROM ${store.t('requests')} FINAL WHERE provider = {p:String} AND kind IN ('request', 'attempt')
     AND ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({b:Int64}, 'UTC')`,
  { p: provider, a, b },
))[0]!.n);

t.test('migration 22: rows of unknown cost counted in the rollup, before it (backfill) and after it (view), nothing else changed', async (t) => {
  await migrate(store, MIGRATIONS.filter((m) => m.version < 22));
  const history = spread(T0 - 2 * H, 30);
  await store.insert('requests', history, 'history');
  const [before] = await store.query<{ n: string; tok: string }>(`SELECT sum(rows) AS n, sum(total_tokens) AS tok FROM ${store.t('usage_hourly')}`);
  t.same(await migrate(store, MIGRATIONS.filter((m) => m.version <= 22)), [22], 'migration 22 applied');
  const [after] = await store.query<{ n: string; tok: string; u: string }>(
    `SELECT sum(rows) AS n, sum(total_tokens) AS tok, sum(unpriced_rows) AS u FROM ${store.t('usage_hourly')}`,
  );
  t.same([after!.n, after!.tok], [before!.n, before!.tok], 'the backfill adds to no other sum');
  const want = (await raw(T0 - 2 * H, T0 + 28 * H)).unpriced;
  t.ok(want > 5, `some rows of unknown cost (${want})`);
  t.equal(Number(after!.u), want, 'the history\'s rows of unknown cost, each once');

  await store.insert('requests', [row(T0 + 5 * H, { unpriced: true }), row(T0 + 5 * H + 1)], 'after-22');
  await store.insert('requests', [row(T0 + 5 * H, { unpriced: true }), row(T0 + 5 * H + 1)], 'after-22'); // a retried batch
  const [later] = await store.query<{ u: string }>(`SELECT sum(unpriced_rows) AS u FROM ${store.t('usage_hourly')}`);
  t.equal(Number(later!.u), want + 1, 'a new row of unknown cost through the view, once');
});

t.test('migration 23: the daily rollup is the sum of the hourly one, history and new rows alike', async (t) => {
  t.same(await migrate(store, MIGRATIONS.filter((m) => m.version <= 23)), [23], 'migration 23 applied');
  t.same(await byDay('usage_daily'), await byDay('usage_hourly'), 'the backfilled days equal their hours');
  const fresh = spread(T0 + 28 * H + 5 * 60_000, 100);
  await store.insert('requests', fresh.slice(0, 80), 'fresh-1');
  await store.insert('requests', fresh.slice(0, 80), 'fresh-1'); // the retry of a batch whose acknowledgement was lost
  await store.insert('requests', fresh.slice(80), 'fresh-2');
  const daily = await byDay('usage_daily');
  t.same(daily, await byDay('usage_hourly'), 'after new rows (and a retried batch) the days still equal their hours');
  t.ok(daily.length >= 6 * 2, `several days of rows (${daily.length} groups)`);
  const [n] = await store.query<{ n: string }>(`SELECT sum(rows) AS n FROM ${store.t('usage_daily')}`);
  t.equal(Number(n!.n), (await raw(0, T0 + 30 * D)).rows, 'every raw row once in the daily rollup');
  const again = await migrate(store);
  t.notOk(again.includes(23), 'applied once');
});

t.test('reads with whole days from the daily rollup equal the raw rows', async (t) => {
  const edges = [T0 - 2 * H - 1, T0 - 90 * 60_000, T0, T0 + 1, T0 + 13 * H, T0 + D, T0 + D + 30 * 60_000, T0 + 2 * D, T0 + 3 * D - H, T0 + 4 * D + 7, T0 + 6 * D];
  let checked = 0;
  for (const x of edges) {
    for (const y of edges) {
      if (y <= x) continue;
      for (const openEnd of [false, true]) {
        if (openEnd && y !== edges[edges.length - 1]) continue; // openEnd: no row after `to`
        const got = await total(store, { from: x, to: y, openEnd });
        const want = await raw(x, y);
        if (got.rows !== want.rows || got.tokens !== want.tokens || Math.abs(got.cost - want.cost) > 1e-12 || got.oldest !== want.oldest || got.unpriced !== want.unpriced) {
          t.fail(`window [${x - T0}, ${y - T0}) openEnd ${openEnd}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
        }
        checked++;
      }
    }
  }
  t.equal(checked, (edges.length * (edges.length - 1)) / 2 + edges.length - 1, `${checked} windows agree with the raw rows`);

  // Grouped by UTC day (daily rollup) and by hour (hourly only): the same rows.
  const from = T0 - 2 * H;
  const to = T0 + 6 * D;
  const days = await aggregate(store, { from, to, by: ['day', 'provider'] });
  const hours = await aggregate(store, { from, to, by: ['hour', 'provider'] });
  const fold = new Map<string, number>();
  for (const g of hours) fold.set(`${g.hour!.slice(0, 10)} ${g.provider}`, (fold.get(`${g.hour!.slice(0, 10)} ${g.provider}`) ?? 0) + g.tokens);
  t.same(days.map((g) => [`${g.day} ${g.provider}`, g.tokens]), [...fold.entries()].sort((x, y) => (x[0] < y[0] ? -1 : 1)), 'per UTC day, the daily rollup and the hours agree');
  const tokyo = await aggregate(store, { from, to, by: ['day'], tz: 'Asia/Tokyo' });
  t.equal(tokyo.reduce((s, g) => s + g.rows, 0), (await raw(from, to)).rows, 'a day in another time zone is read from hours, every row once');
  t.not(tokyo[0]!.rows, days.filter((g) => g.day === tokyo[0]!.day).reduce((s, g) => s + g.rows, 0), 'and it is not the UTC day');

  // Windows that end inside a day (today, this week, this month to a point in the afternoon).
  const now = T0 + 4 * D + 15 * H + 7;
  const windows = [{ from: T0 + 4 * D, to: now }, { from: T0 + 2 * D, to: now }, { from: T0 - D, to: now }, { from: T0, to: T0 + 3 * D + 5 * H }];
  const got = await aggregateWindows(store, { windows, by: ['kind'] });
  for (const [i, w] of windows.entries()) {
    const want = await raw(w.from, w.to);
    t.same([got[i]!.reduce((s, g) => s + g.rows, 0), got[i]!.reduce((s, g) => s + g.tokens, 0)], [want.rows, want.tokens], `window ${i}`);
  }

  // The quota's windows: a rolling window and a reset at 02:00 cut days; the month and today do not.
  const sums = await providerWindows(store, {
    start: T0 - D, to: now, today: T0 + 4 * D, month: T0 - D, kinds: ['request', 'attempt'],
    windows: [
      { provider: 'p', from: T0 + 4 * D + 10 * H, to: now, secondary: { from: T0 - D, to: now } },
      { provider: 'q', from: T0 + D + 2 * H, to: now },
    ],
  });
  const pRows = sums.filter((s) => s.provider === 'p').reduce((n, s) => n + s.rows, 0);
  const qRows = sums.filter((s) => s.provider === 'q').reduce((n, s) => n + s.rows, 0);
  t.equal(pRows, await rawOf('p', T0 + 4 * D + 10 * H, now), 'p: its window from 10:00 today');
  t.equal(qRows, await rawOf('q', T0 + D + 2 * H, now), 'q: its window from 02:00 three days ago');
  t.equal(sums.filter((s) => s.provider === 'p').reduce((n, s) => n + s.secondaryCalls, 0), await rawOf('p', T0 - D, now), 'p: its secondary window');

  // A window that starts mid-hour (a rolling window): its partial first hour from the raw rows, in the same read,
  // counted in that window only (not in the secondary window, today or the month, which have the hour already).
  const [pRow] = await store.query<{ ms: string }>(
    `SELECT toUnixTimestamp64Milli(min(ts)) AS ms FROM ${store.t('requests')} WHERE provider = 'p' AND ts > fromUnixTimestamp64Milli({a:Int64}, 'UTC')`, { a: T0 + 4 * D + 9 * H },
  );
  const mid = Number(pRow!.ms) - 60_000; // a minute before a row of p
  const hourEnd = Math.ceil(mid / H) * H;
  const withEdge = await providerWindows(store, {
    start: T0 - D, to: now, today: T0 + 4 * D, month: T0 - D, kinds: ['request', 'attempt'],
    windows: [{ provider: 'p', from: hourEnd, to: now, secondary: { from: T0 - D, to: now } }, { provider: 'q', from: T0 + D + 2 * H, to: now }],
    edges: [{ provider: 'p', from: mid, to: hourEnd }],
  });
  const of = (list: typeof sums, provider: string, k: 'rows' | 'secondaryCalls' | 'todayCost' | 'monthCost' | 'oldest') =>
    list.filter((s) => s.provider === provider).reduce((n, s) => (k === 'oldest' ? Math.min(n, s.oldest ?? Infinity) : n + (s[k] as number)), k === 'oldest' ? Infinity : 0);
  const want = await rawOf('p', mid, now);
  t.ok(mid % H !== 0 && want > (await rawOf('p', hourEnd, now)), 'the window starts mid-hour, and the partial hour holds rows');
  t.equal(of(withEdge, 'p', 'rows'), want, 'p: its window from mid-hour, the partial hour included');
  const [first] = await store.query<{ ms: string }>(
    `SELECT toUnixTimestamp64Milli(min(ts)) AS ms FROM ${store.t('requests')} FINAL WHERE provider = 'p' AND ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC')`, { a: mid },
  );
  t.equal(of(withEdge, 'p', 'oldest'), Number(first!.ms), 'the oldest row counted is in the partial hour');
  for (const k of ['secondaryCalls', 'todayCost', 'monthCost'] as const) t.equal(of(withEdge, 'p', k), of(sums, 'p', k), `${k}: the partial hour not counted again`);
  t.equal(of(withEdge, 'q', 'rows'), qRows, 'another provider\'s window unchanged');
  // Two rolling windows that start at the same instant share one condition: each provider's partial hour its own.
  let h = T0 + 4 * D;
  while (h < now - H && ((await rawOf('p', h + 60_000, h + H)) === 0 || (await rawOf('q', h + 60_000, h + H)) === 0)) h += H;
  t.ok(h < now - H, 'an hour with rows of p and q after its first minute');
  const both = await providerWindows(store, {
    start: T0 - D, to: now, today: T0 + 4 * D, month: T0 - D, kinds: ['request', 'attempt'],
    windows: [{ provider: 'p', from: h + H, to: now }, { provider: 'q', from: h + H, to: now }],
    edges: [{ provider: 'p', from: h + 60_000, to: h + H }, { provider: 'q', from: h + 60_000, to: h + H }],
  });
  t.same([of(both, 'p', 'rows'), of(both, 'q', 'rows')], [await rawOf('p', h + 60_000, now), await rawOf('q', h + 60_000, now)], 'p and q: each window from a minute past the hour, its partial hour included');
});

t.test('a window that ends now takes its current day from the daily rollup: one table for whole days to now, the raw rows\' figures', async (t) => {
  // openEnd: no row starts at or after `to` (the real present). The newest row is on day 5 in the morning.
  const [last] = await store.query<{ ms: string }>(`SELECT toUnixTimestamp64Milli(max(ts)) AS ms FROM ${store.t('requests')}`);
  const now = T0 + 5 * D + 20 * H + 7;
  t.ok(Number(last!.ms) > T0 + 5 * D && Number(last!.ms) < now, 'rows on the last day, none after now');
  const tables: string[][] = [];
  const query = store.query.bind(store);
  const spy = <T>(sql: string, params?: Record<string, unknown>): Promise<T[]> => {
    tables.push(['requests', 'usage_hourly', 'usage_daily'].filter((x) => sql.includes(store.t(x))));
    return query<T>(sql, params);
  };
  Object.assign(store, { query: spy });
  t.teardown(() => void Object.assign(store, { query }));
  const read = async <R>(f: () => Promise<R>): Promise<{ r: R; tables: string[] }> => {
    tables.length = 0;
    const r = await f();
    return { r, tables: tables.flat() };
  };

  for (const from of [T0 - D, T0 + 2 * D, T0 + 5 * D, T0 + 5 * D + 3 * H, T0 + 2 * D + 30 * 60_000, T0 + 4 * D + 13 * H]) {
    const { r: got, tables: read1 } = await read(() => total(store, { from, to: now, openEnd: true }));
    const want = await raw(from, now);
    t.same([got.rows, got.tokens, got.cost.toFixed(12), got.oldest, got.unpriced], [want.rows, want.tokens, want.cost.toFixed(12), want.oldest, want.unpriced], `[${(from - T0) / H} h, now): the raw rows' figures`);
    if (from % D === 0) t.same(read1, ['usage_daily'], `[${(from - T0) / H} h, now): whole days to now read the daily rollup alone`);
  }
  const closed = await read(() => total(store, { from: T0 + 2 * D, to: now }));
  t.same(closed.tables, ['requests', 'usage_hourly', 'usage_daily'], 'the same window not ending now reads its last day from hours and raw rows');

  // The overview's windows: today, this week, this month, to now.
  const windows = [{ from: T0 + 5 * D, to: now }, { from: T0 + 2 * D, to: now }, { from: T0 - D, to: now }];
  const { r: got, tables: read2 } = await read(() => aggregateWindows(store, { windows, by: ['kind', 'provider'], openEnd: true }));
  for (const [i, w] of windows.entries()) {
    const want = await raw(w.from, w.to);
    t.same([got[i]!.reduce((s, g) => s + g.rows, 0), got[i]!.reduce((s, g) => s + g.tokens, 0)], [want.rows, want.tokens], `window ${i}: the raw rows' figures`);
  }
  t.same(read2, ['usage_daily'], 'windows of whole days to now: the daily rollup alone');

  // The quota's read: a window from midnight to now and a month need no hour; a reset at 02:00 today cuts the day.
  const quota = (windows: { provider: string; from: number; to: number }[]) => read(() => providerWindows(store, {
    start: T0 - D, to: now, today: T0 + 5 * D, month: T0 - D, kinds: ['request', 'attempt'], openEnd: true, windows,
  }));
  const rowsFor = (sums: Awaited<ReturnType<typeof providerWindows>>, provider: string) => sums.filter((s) => s.provider === provider).reduce((n, s) => n + s.rows, 0);
  const costOf = (sums: Awaited<ReturnType<typeof providerWindows>>, k: 'todayCost' | 'monthCost') => sums.reduce((n, s) => n + s[k], 0);
  const days = await quota([{ provider: 'p', from: T0 + 5 * D, to: now }, { provider: 'q', from: T0 + 3 * D, to: T0 + 6 * D }]);
  const cut = await quota([{ provider: 'p', from: T0 + 5 * D + 2 * H, to: now }, { provider: 'q', from: T0 + 3 * D, to: T0 + 6 * D }]);
  t.equal(rowsFor(days.r, 'p'), await rawOf('p', T0 + 5 * D, now), 'p: today to now');
  t.equal(rowsFor(days.r, 'q'), await rawOf('q', T0 + 3 * D, now), 'q: a window that ends after now (tomorrow) counts to now');
  t.same(days.tables, ['usage_daily'], 'no window cuts a day: the daily rollup alone');
  t.equal(rowsFor(cut.r, 'p'), await rawOf('p', T0 + 5 * D + 2 * H, now), 'p: from 02:00 today');
  t.equal(rowsFor(cut.r, 'q'), await rawOf('q', T0 + 3 * D, now), 'q: unchanged beside a window that cuts today');
  t.same(cut.tables, ['usage_hourly', 'usage_daily'], 'a reset at 02:00 today: today from hours');
  for (const k of ['todayCost', 'monthCost'] as const) t.equal(costOf(days.r, k).toFixed(12), costOf(cut.r, k).toFixed(12), `${k}: the same either way`);
  const [spent] = await store.query<{ c: string }>(
    `SELECT toString(sum(cost)) AS c FROM ${store.t('requests')} FINAL WHERE kind IN ('request', 'attempt') AND ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC')`, { a: T0 + 5 * D },
  );
  t.equal(costOf(days.r, 'todayCost').toFixed(12), Number(spent!.c).toFixed(12), 'today\'s cost: the raw rows\'');

  // Every provider's cost today and this month, added exactly (the budget's stored spend when its day and month are
  // UTC's): the raw rows' billed cost, whether or not a window cuts the day, and with no provider's window at all.
  const rawCost = async (from: number) => Number((await store.query<{ c: string }>(
    `SELECT toString(sum(cost)) AS c FROM ${store.t('requests')} FINAL WHERE kind IN ('request', 'attempt') AND ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC')`, { a: from },
  ))[0]!.c);
  const want = [(await rawCost(T0 + 5 * D)).toFixed(12), (await rawCost(T0 - D)).toFixed(12)];
  for (const windows of [[{ provider: 'p', from: T0 + 5 * D, to: now }], [{ provider: 'p', from: T0 + 5 * D + 2 * H, to: now }], [{ provider: 'nobody', from: T0 + 3 * D, to: now }]]) {
    const { cost } = await readWindows(store, { start: T0 - D, to: now, today: T0 + 5 * D, month: T0 - D, kinds: ['request', 'attempt'], openEnd: true, windows });
    t.same([cost!.today.toFixed(12), cost!.month.toFixed(12)], want, `every provider's cost today and this month beside ${windows[0]!.provider}'s window from ${(windows[0]!.from - T0) / H} h`);
  }
  t.equal((await readWindows(store, { start: T0 - D, to: now, today: T0 + 5 * D, month: T0 - D, kinds: ['request'], openEnd: true, windows: [] })).cost, null, 'no window: nothing read');
});

t.test('a read of some sums reads only those: the same figures as a read of all, the others NaN', async (t) => {
  // Windows with raw edges at both ends, days and hours between: every source of the read narrows its columns.
  const windows = [
    { from: T0 - 2 * H - 1, to: T0 + 4 * D + 7 },
    { from: T0 + 13 * H, to: T0 + D + 30 * 60_000 },
  ];
  const fields = ['rows', 'input', 'cached', 'cacheWrite', 'output', 'reasoning', 'tokens', 'cost', 'listCost', 'durationMs', 'oldest', 'unpriced'] as const;
  for (const w of windows) {
    for (const by of [[], ['provider', 'kind'], ['day', 'model'], ['hour', 'status']] as const) {
      const all = await aggregate(store, { ...w, by });
      t.ok(all.length > 0, `[${w.from - T0}, ${w.to - T0}) by ${by.join(',') || 'nothing'}: groups to compare`);
      for (const f of fields) {
        const some = await aggregate(store, { ...w, by, sums: [f] });
        const key = (g: object) => by.map((d) => (g as Record<string, unknown>)[d]).join("|");
        t.same(some.map((g) => [key(g), g.rows, g[f]]), all.map((g) => [key(g), g.rows, g[f]]), `${f} alone (and rows) as in a read of all`);
        const other = fields.find((x) => x !== f && x !== 'rows')!;
        t.ok(some.every((g) => Number.isNaN(g[other])), `${other}, not read, is NaN`);
      }
    }
  }
  const [w] = await aggregateWindows(store, { windows: [{ from: T0, to: T0 + 2 * D }, { from: T0 + D, to: T0 + 2 * D }], by: ['provider'], sums: ['cost'] });
  const [full] = await aggregateWindows(store, { windows: [{ from: T0, to: T0 + 2 * D }, { from: T0 + D, to: T0 + 2 * D }], by: ['provider'] });
  t.same(w!.map((g) => [g.provider, g.rows, g.cost]), full!.map((g) => [g.provider, g.rows, g.cost]), 'aggregateWindows: the same');
});

t.test('hours and days in a zone off the whole hour (Asia/Kolkata, +05:30) are its own, not UTC hours shifted', async (t) => {
  // Rows every 37 minutes: many fall in the half of a UTC hour that belongs to the next local hour (or, at 18:30Z,
  // the next local day). The read must put each where the raw rows' own local hour and day put it.
  const tz = 'Asia/Kolkata';
  const from = T0 - 2 * H;
  const to = T0 + 6 * D;
  const want = async (expr: string) =>
    (await store.query<{ k: string; n: string; tok: string }>(
      `SELECT toString(${expr}) AS k, count() AS n, sum(total_tokens) AS tok FROM ${store.t('requests')} FINAL
       WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC') GROUP BY k ORDER BY k`,
      { from, to },
    )).map((r) => [r.k, Number(r.n), Number(r.tok)]);
  const days = await aggregate(store, { from, to, by: ['day'], tz, sums: ['tokens'] });
  t.same(days.map((g) => [g.day, g.rows, g.tokens]), await want(`toDate(ts, '${tz}')`), 'local days as the raw rows give them');
  const hours = await aggregate(store, { from, to, by: ['hour_epoch'], tz, sums: ['tokens'] });
  t.same(hours.map((g) => [g.hour_epoch, g.rows, g.tokens]), await want(`toUnixTimestamp(toStartOfHour(ts, '${tz}'))`), 'local hours as the raw rows give them');
  t.ok(hours.every((g) => (Number(g.hour_epoch) * 1000) % H === 30 * 60_000), 'each hour starts at :30 UTC');
  const paris = await aggregate(store, { from, to, by: ['hour_epoch'], tz: 'Europe/Paris', sums: ['tokens'] });
  t.same(paris.map((g) => [g.hour_epoch, g.rows, g.tokens]), await want('toUnixTimestamp(toStartOfHour(ts))'), 'a whole-hour zone: its hours are UTC hours');
});

// Last: it writes rows twice. A zone off the whole hour reads every row of its window raw; a raw range of more than
// two hours is deduplicated by FINAL (store/aggregate.ts, deduped), the rest by LIMIT 1 BY: either counts a row once.
t.test('a zone off the whole hour: a day of raw rows read through FINAL, a row written twice counted once', async (t) => {
  const day = T0 + 200 * D;
  const rows = spread(day, 24);
  // No background merge may fold the two copies into one before the read: then the check would prove nothing.
  await store.command(`SYSTEM STOP MERGES ${store.t('requests')}`);
  t.teardown(() => store.command(`SYSTEM START MERGES ${store.t('requests')}`));
  await store.insert('requests', rows, 'kolkata-day');
  await store.insert('requests', rows.slice(5, 8), 'kolkata-again'); // three rows again, in another batch
  const raw = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${store.t('requests')} WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')`,
    { from: day, to: day + D },
  );
  t.equal(Number(raw[0]!.n), rows.length + 3, 'the raw table holds the three rows twice (merges stopped)');
  const query = store.query;
  const sql: string[] = [];
  store.query = function (this: typeof store, text: string, params?: Parameters<typeof query>[1]) {
    sql.push(text);
    return query.call(this, text, params);
  } as typeof query;
  try {
    const tz = 'Asia/Kolkata';
    const hours = await aggregate(store, { from: day, to: day + D, by: ['hour_epoch'], tz, sums: ['tokens'] });
    const local = (ts: number) => Math.floor((ts + 5.5 * H) / H) * H - 5.5 * H;
    const want = new Map<number, [number, number]>();
    for (const r of rows) {
      const k = local(Number(r.ts));
      const [n, tok] = want.get(k) ?? [0, 0];
      want.set(k, [n + 1, tok + Number(r.total_tokens)]);
    }
    t.same(hours.map((g) => [Number(g.hour_epoch) * 1000, g.rows, g.tokens]), [...want].sort(([a], [b]) => a - b).map(([k, [n, tok]]) => [k, n, tok]), 'each local hour counts each row once');
    t.match(sql.at(-1), /FROM \S+requests\S* FINAL WHERE/, 'the day of raw rows is read through FINAL');
    sql.length = 0;
    await aggregate(store, { from: day + 30 * 60_000, to: day + 5 * H + 10 * 60_000, by: ['provider'] });
    t.match(sql.at(-1), /LIMIT 1 BY request_id/, 'an hour-aligned zone\'s edges (40 minutes) through LIMIT 1 BY');
    t.notMatch(sql.at(-1), /FINAL/);
  } finally {
    store.query = query;
  }
});
