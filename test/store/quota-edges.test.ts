// The quota's rolling windows' partial first hours, kept between reads (src/store/quota-edges.ts): the same figures
// as a read without the cache, on every read; an hour that has ended is read from the raw rows once, and later reads
// name no raw table; a row inserted into that hour afterwards is counted (the hour's rollup rows, in the same read, no
// longer agree, so it is read again); an hour whose raw rows never agree with its rollup (a request inserted twice, in
// two batches) goes back to the raw read; an hour not ended, or inside a day taken from the daily rollup, is read raw.
// quota-edges.server.test.ts runs the same on the server path.

import t from 'tap';
import { migrate } from '../../src/store/migrations.js';
import { providerWindows, type ProviderModelSums } from '../../src/store/quota-windows.js';
import { EdgeCache } from '../../src/store/quota-edges.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';

const store = await openTestStore(t, { database: 'qedges', prefix: 'tollgate-qedges-' });
await migrate(store);

const H = 3_600_000;
const D = 24 * H;
const T0 = Date.UTC(2026, 4, 12); // 2026-05-12 00:00Z
let seq = 0;
function row(at: number, provider: string, requestId = uuidv7(at + seq), model?: string) {
  seq++;
  return toRow(makeRecord({
    kind: 'request', requestId, startedAt: at, endedAt: at + 100, endpoint: 'chat.completions',
    provider, providerGroup: 'paid', model: model ?? `${provider}/m${seq % 2}`, requestedModel: 'm', modelKnown: true,
    apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 10 + (seq % 7), cached: null, cacheWrite: null, output: 4, reasoning: null }, usageSource: 'reported',
    cost: { cost: 0.000123 * (1 + (seq % 5)), listCost: 0.0002, priceSource: 'config' },
    latency: { kind: 'unary', totalMs: 100 + seq }, upstreamMs: 90,
  }));
}

// Rows of p, q and r every 7 minutes and 13 ms from the day before to 05:50, and two rows of p at the same instant.
const rows = [];
for (let at = T0 - D + 11; at < T0 + 5 * H + 50 * 60_000; at += 7 * 60_000 + 13) rows.push(row(at, 'p'), row(at + 1, 'q'), row(at + 2, 'r'));
rows.push(row(T0 + 2 * H + 40 * 60_000, 'p'), row(T0 + 2 * H + 40 * 60_000, 'p'));
await store.insert('requests', rows, 'history');

const now = T0 + 5 * H + 55 * 60_000;
/** The quota's read as the service makes it: p and q on 3-hour rolling windows from `from`, r on today. */
async function read(from: number, cache: EdgeCache | undefined, at = now) {
  const hourEnd = Math.ceil(from / H) * H;
  return (await providerWindows(store, {
    start: T0 - D, to: at + 1, today: T0, month: T0 - D, kinds: ['request'], openEnd: true,
    windows: [{ provider: 'p', from: hourEnd, to: at + 1 }, { provider: 'q', from: hourEnd, to: at + 1 }, { provider: 'r', from: T0, to: at + 1 }],
    edges: [{ provider: 'p', from, to: Math.min(hourEnd, at + 1) }, { provider: 'q', from, to: Math.min(hourEnd, at + 1) }],
    ...(cache === undefined ? {} : { edgeCache: cache }),
  })).groups;
}

// Every SQL the store is asked, and which tables it names.
const asked: string[] = [];
const query = store.query.bind(store);
Object.assign(store, { query: <T>(sql: string, params?: Record<string, unknown>): Promise<T[]> => (asked.push(sql), query<T>(sql, params)) });
t.teardown(() => void Object.assign(store, { query }));
async function reads<R>(f: () => Promise<R>): Promise<{ r: R; tables: string[][] }> {
  asked.length = 0;
  const r = await f();
  return { r, tables: asked.map((sql) => ['requests', 'usage_hourly', 'usage_daily'].filter((x) => sql.includes(store.t(x)))) };
}
const byKey = (sums: ProviderModelSums[]) => Object.fromEntries(sums.map((s) => [`${s.provider} ${s.model}`, s]).sort(([a], [b]) => (a! < b! ? -1 : 1)));
const rawCount = async (provider: string, from: number, to: number) => Number((await query<{ n: string }>(
  `SELECT count() AS n FROM ${store.t('requests')} FINAL WHERE provider = {p:String}
     AND ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({b:Int64}, 'UTC')`, { p: provider, a: from, b: to },
))[0]!.n);

t.test('an hour that has ended: read raw once, then from what is kept, the same figures every time', async (t) => {
  const cache = new EdgeCache();
  const from = now - 3 * H; // 02:55: the partial hour [02:55, 03:00) has ended
  const plain = await read(from, undefined);
  const first = await reads(() => read(from, cache));
  t.same(byKey(first.r), byKey(plain), 'the first read: the same figures as without the cache');
  t.same(first.tables, [['requests', 'usage_hourly', 'usage_daily']], 'one read, the raw rows of the hour in it');
  t.match(asked[0]!, /GROUP BY at_s, provider, model, ts/, 'the hour read per request time');

  for (const later of [from, from + 60_000, from + 4 * 60_000 + 59_999]) {
    const again = await reads(() => read(later, cache, now + (later - from)));
    t.same(byKey(again.r), byKey(await read(later, undefined, now + (later - from))), `window from ${new Date(later).toISOString()}: the same figures`);
    t.same(again.tables, [['usage_hourly', 'usage_daily']], 'one read, no raw table');
  }
  const p = (await read(from + 60_000, cache)).filter((s) => s.provider === 'p').reduce((n, s) => n + s.rows, 0);
  t.equal(p, await rawCount('p', from + 60_000, now + 1), 'p: the raw rows\' count');
  const early = await reads(() => read(from - 60_000, cache)); // before what is kept: read again
  t.same(byKey(early.r), byKey(await read(from - 60_000, undefined)), 'a window starting earlier than what is kept: the same figures');
  t.same(early.tables, [['requests', 'usage_hourly', 'usage_daily']], 'and its hour read again');
});

t.test('a row inserted into the kept hour afterwards is counted: the rollup no longer agrees, the hour is read again', async (t) => {
  const cache = new EdgeCache();
  const from = now - 3 * H;
  await read(from, cache);
  t.same((await reads(() => read(from, cache))).tables, [['usage_hourly', 'usage_daily']], 'kept');
  const before = byKey(await read(from, undefined));
  await store.insert('requests', [row(from + 90_000, 'p'), row(from - 60_000, 'q')], 'late');
  const after = await reads(() => read(from, cache));
  const want = byKey(await read(from, undefined));
  t.same(byKey(after.r), want, 'the same figures as without the cache');
  const rowsOf = (m: Record<string, ProviderModelSums>, p: string) => Object.values(m).filter((s) => s.provider === p).reduce((n, s) => n + s.rows, 0);
  t.equal(rowsOf(want, 'p'), rowsOf(before, 'p') + 1, 'p: the late row in its window');
  t.equal(rowsOf(want, 'q'), rowsOf(before, 'q'), 'q: a late row before its window start, not in it');
  t.same(after.tables, [['usage_hourly', 'usage_daily'], ['requests']], 'the kept hour read again, after the read that showed it changed');
  t.same((await reads(() => read(from, cache))).tables, [['usage_hourly', 'usage_daily']], 'then kept again');
  // A late row of a model the kept hour had none of: the rollup has a model more than what is kept.
  await store.insert('requests', [row(from + 120_000, 'p', undefined, 'p/other')], 'late-model');
  const other = await reads(() => read(from, cache));
  t.same(byKey(other.r), byKey(await read(from, undefined)), 'a late row of another model: the same figures as without the cache');
  t.equal(byKey(other.r)['p p/other']?.rows, 1, 'the other model\'s row counted');
  t.same(other.tables, [['usage_hourly', 'usage_daily'], ['requests']], 'and the hour read again');
});

t.test('an hour whose raw rows never agree with its rollup (a request inserted twice, in two batches): read raw', async (t) => {
  const cache = new EdgeCache();
  const from = now - 3 * H + 10 * 60_000; // 03:05: the hour 03:00-04:00
  const twice = row(T0 + 3 * H + 30 * 60_000, 'p');
  await store.insert('requests', [twice], 'twice-1');
  await store.insert('requests', [twice], 'twice-2');
  for (const n of [1, 2, 3, 4]) {
    const got = await reads(() => read(from, cache));
    t.same(byKey(got.r), byKey(await read(from, undefined)), `read ${n}: the same figures as without the cache`);
    t.equal(got.tables.length, 1, `read ${n}: one read`);
    t.ok(got.tables[0]!.includes('requests'), `read ${n}: the raw rows in it`);
    // Two fills disagree, then the hour's raw rows are read as before (summed per hour, not per request time).
    t.equal(/GROUP BY at_s, provider, model, ts/.test(asked[0]!), n <= 2, `read ${n}: ${n <= 2 ? 'read per request time, to be kept' : 'read raw as before'}`);
  }
});

t.test('an hour not ended yet, or inside a day the daily rollup gives: read raw, the same figures', async (t) => {
  const cache = new EdgeCache();
  const current = now - 20 * 60_000; // 05:35: the hour runs to now
  for (let n = 0; n < 2; n++) {
    const got = await reads(() => read(current, cache));
    t.same(byKey(got.r), byKey(await read(current, undefined)), `the current hour, read ${n + 1}: the same figures`);
    t.notOk(/GROUP BY at_s, provider, model, ts/.test(asked[0]!), 'read raw as before');
  }
  // A window from 23:10 the day before: its hour ends at midnight, which no day is cut at, so that day comes from the
  // daily rollup and the read has no hourly rows of 23:00 to check a kept hour against.
  const lastNight = T0 - 50 * 60_000;
  for (let n = 0; n < 2; n++) {
    const got = await reads(() => read(lastNight, cache));
    t.same(byKey(got.r), byKey(await read(lastNight, undefined)), `23:10 the day before, read ${n + 1}: the same figures`);
    t.notOk(/GROUP BY at_s, provider, model, ts/.test(asked[0]!), 'read raw as before');
  }
});
