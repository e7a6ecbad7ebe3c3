// The budget's spend (src/accounting/budget.ts): the day and the month in the budget's time zone, from ClickHouse in
// ONE read when both windows start on an hour (every zone on the whole hour), one read each otherwise (a half-hour
// zone's midnight is not on a UTC hour), plus what this process published and has not stored. The figures are checked
// against sums of the rows inserted, and the reads against the store's own count.

import t from 'tap';
import { BudgetService, type SharedSpend } from '../../src/accounting/budget.js';
import { QuotaService } from '../../src/accounting/quota.js';
import { DEMO_PROVIDER } from '../helpers/app.js';
import { parseConfig } from '../../src/config/load.js';
import { openTestStore } from '../helpers/store-paths.js';
import { countReads } from '../helpers/store-reads.js';
import { migrate } from '../../src/store/migrations.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordKind, type UsageRecord } from '../../src/ledger/record.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { settledWithin, type WriteFence } from '../../src/store/write-fence.js';

const store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-budget-' });
await migrate(store);
const reads = countReads(t, store);

// A fixed clock: 2026-03-20 14:10 UTC (19:40 in Kolkata; the budget's day there began at 18:30 UTC).
const NOW = Date.UTC(2026, 2, 20, 14, 10);
let seq = 0;
function record(at: number, cost: number, kind: RecordKind = 'request'): UsageRecord {
  const startedAt = at + seq++;
  return makeRecord({
    requestId: uuidv7(startedAt), startedAt, endedAt: startedAt + 10, endpoint: 'chat.completions', provider: 'p', providerGroup: 'paid',
    model: 'p/m', requestedModel: 'p/m', modelKnown: true, apiKeyName: 'k', stream: false, status: 'success', httpStatus: 200, errorType: '',
    usage: { input: 90, cached: null, cacheWrite: null, output: 10, reasoning: null }, usageSource: 'reported',
    cost: { cost, listCost: cost }, latency: { kind: 'unary', totalMs: 10 }, upstreamMs: 9, kind,
  });
}

const H = 3_600_000;
// Spend on both sides of each edge: the UTC day's and month's, and Kolkata's day (18:30 UTC the day before).
const rows = [
  record(Date.UTC(2026, 1, 28, 23, 0), 100), // February: in no window
  record(Date.UTC(2026, 2, 1, 0, 0), 0.5), // the UTC month's first instant
  record(Date.UTC(2026, 2, 10, 9, 0), 0.25),
  record(Date.UTC(2026, 2, 19, 18, 0), 0.125), // yesterday in both zones
  record(Date.UTC(2026, 2, 19, 18, 45), 0.0625), // yesterday in UTC, today in Kolkata
  record(Date.UTC(2026, 2, 20, 0, 0), 2), // today in both (UTC midnight)
  record(NOW - H, 4, 'attempt'), // a combo's attempt spends
  record(NOW - 60_000, 8, 'keepalive'), // so does a keep-alive ping
  record(NOW - 30_000, 16, 'combo'), // a combo row repeats its attempts' sum: not billed
  record(NOW + 60_000, 32), // after now: not yet
];
await store.insert('requests', rows.map(toRow));

const config = (timezone: string) => parseConfig({ budgets: { daily_usd: 10, monthly_usd: 100, timezone } }, {});
const spent = (from: number, to = NOW + 1) =>
  rows.filter((r) => r.kind !== 'combo' && r.startedAt >= from && r.startedAt < to).reduce((s, r) => s + r.cost.cost, 0);

t.test('a zone on the whole hour: the day and the month in one read', async (t) => {
  for (const tz of ['UTC', 'America/New_York']) {
    const budget = new BudgetService(store, () => config(tz), { now: () => NOW });
    reads.reset();
    const s = await budget.refresh();
    t.equal(reads.count, 1, `${tz}: one read for both windows`);
    const dayFrom = Date.parse(s.daily.from);
    const monthFrom = Date.parse(s.monthly.from);
    t.equal(dayFrom % H, 0, `${tz}: its day starts on an hour`);
    t.equal(s.daily.spent, spent(dayFrom), `${tz}: the day's spend is the rows since its midnight`);
    t.equal(s.monthly.spent, spent(monthFrom), `${tz}: the month's spend is the rows since the 1st`);
  }
  const utc = await new BudgetService(store, () => config('UTC'), { now: () => NOW }).refresh();
  t.equal(utc.daily.spent, 14, 'UTC: today 2 + the attempt 4 + the ping 8 (the combo row and the future row not)');
  t.equal(utc.monthly.spent, 14.9375, 'UTC: the month adds 0.5 + 0.25 + 0.125 + 0.0625, not February');
});

t.test('a half-hour zone: its midnight is not on a UTC hour, so each window is read on its own', async (t) => {
  const budget = new BudgetService(store, () => config('Asia/Kolkata'), { now: () => NOW });
  reads.reset();
  const s = await budget.refresh();
  t.equal(reads.count, 2, 'two reads');
  t.equal(s.daily.from, new Date(Date.UTC(2026, 2, 19, 18, 30)).toISOString(), 'the day began at 18:30 UTC');
  t.equal(s.daily.spent, 14.0625, 'the 18:45 UTC row is today there');
  t.equal(s.monthly.spent, spent(Date.UTC(2026, 1, 28, 18, 30)), 'the month since Kolkata\'s 1st (18:30 UTC on the 28th)');
  t.equal(s.monthly.spent, 114.9375, 'which holds the February 23:00 UTC row');
});

t.test('on the 1st the day and the month are the same window: both figures from the one read', async (t) => {
  const first = Date.UTC(2026, 2, 1, 0, 30);
  const budget = new BudgetService(store, () => config('UTC'), { now: () => first });
  reads.reset();
  const s = await budget.refresh();
  t.equal(reads.count, 1, 'one read');
  t.equal(s.daily.from, s.monthly.from, 'the same start');
  t.equal(s.daily.spent, 0.5, 'the day: the row at midnight');
  t.equal(s.monthly.spent, 0.5, 'the month: the same row');
});

t.test('what this process published and has not stored counts in every window it falls in, once stored not twice', async (t) => {
  const budget = new BudgetService(store, () => config('UTC'), { now: () => NOW });
  const before = await budget.refresh();
  const late = record(NOW - 5_000, 0.03125);
  budget.published(late);
  let s = await budget.refresh();
  t.equal(s.daily.spent, before.daily.spent + 0.03125, 'the day counts the published record');
  t.equal(s.monthly.spent, before.monthly.spent + 0.03125, 'so does the month');
  await store.insert('requests', [toRow(late)]);
  budget.written([late.requestId]);
  s = await budget.refresh();
  t.equal(s.daily.spent, before.daily.spent + 0.03125, 'stored: counted once');
  t.equal(s.monthly.spent, before.monthly.spent + 0.03125, 'in the month too');
  rows.push(late);
});

t.test("the quota's read sums the budget's windows too: the same figures, taken only while exact", async (t) => {
  // A fence as the batch writer keeps it (src/store/writer.ts, WriteFence): inserts begun and ended.
  const fence = { insertsStarted: 4, insertsEnded: 4, settled: () => Promise.resolve(), hold: () => Promise.resolve(() => undefined) };
  // The provider the quota knows is not the one the rows name: the budget's spend is every provider's.
  const withProvider = (timezone: string) => parseConfig({ budgets: { daily_usd: 10, monthly_usd: 100, timezone }, providers: { other: DEMO_PROVIDER } }, {});
  let now = NOW;
  const spendOf = async (tz: string): Promise<SharedSpend | null> => {
    const quota = new QuotaService(store, () => withProvider(tz), { now: () => now, fence });
    await quota.entries();
    return quota.spend;
  };
  // Europe/London is at UTC's offset in March until the 29th: its day and month start on UTC midnights.
  for (const tz of ['UTC', 'Europe/London']) {
    const shared = await spendOf(tz);
    t.ok(shared !== null && shared.clean && shared.insertsStarted === 4, `${tz}: the quota's read summed the budget's windows, no insert running`);
    const budget = new BudgetService(store, () => withProvider(tz), { now: () => now, fence });
    reads.reset();
    const s = await budget.refresh(shared);
    t.equal(reads.count, 0, `${tz}: no read of its own`);
    t.same([s.daily.spent, s.monthly.spent], [spent(Date.parse(s.daily.from)), spent(Date.parse(s.monthly.from))], `${tz}: the rows' spend in its day and month`);
    const own = await new BudgetService(store, () => withProvider(tz), { now: () => now, fence }).refresh();
    t.same([s.daily.spent, s.monthly.spent], [own.daily.spent, own.monthly.spent], `${tz}: what its own read gives`);
  }
  // A zone off UTC's offset: its day would cut a day of the daily rollup, and the quota's read is not made costlier for
  // it (the same SQL as without a budget); the budget reads for itself.
  const sqlOf = async (cfg: ReturnType<typeof withProvider>) => {
    const asked: string[] = [];
    const query = store.query;
    store.query = ((sql: string, params?: Record<string, unknown>) => (asked.push(sql), query.call(store, sql, params))) as typeof store.query;
    try {
      await new QuotaService(store, () => cfg, { now: () => now, fence }).entries();
    } finally {
      store.query = query;
    }
    return asked;
  };
  const noBudget = await sqlOf(parseConfig({ providers: { other: DEMO_PROVIDER } }, {}));
  for (const tz of ['America/New_York', 'Asia/Tokyo', 'Asia/Kolkata']) {
    t.equal(await spendOf(tz), null, `${tz}: the budget's windows are not summed by the quota's read`);
    t.same(await sqlOf(withProvider(tz)), noBudget, `${tz}: the quota's read as without a budget`);
  }
  t.notSame(await sqlOf(withProvider('UTC')), [], 'the quota reads');

  const shared = (await spendOf('UTC'))!;
  const budget = new BudgetService(store, () => withProvider('UTC'), { now: () => now, fence });
  const own = await budget.refresh();
  const late = record(NOW - 4_000, 0.015625);
  budget.published(late);
  reads.reset();
  let s = await budget.refresh(shared);
  t.equal(reads.count, 0, 'taken');
  t.equal(s.daily.spent, own.daily.spent + 0.015625, 'with the record published and not stored, once');

  // The record's insert begins: the shared read may or may not hold its row (it ran before), so the budget reads.
  fence.insertsStarted++;
  await store.insert('requests', [toRow(late)]);
  budget.written([late.requestId]);
  fence.insertsEnded++;
  reads.reset();
  s = await budget.refresh(shared);
  t.equal(reads.count, 1, 'an insert began since the shared read: a read of its own');
  t.equal(s.daily.spent, own.daily.spent + 0.015625, 'the record once, now stored');
  rows.push(late);

  // A read that began while an insert was running is not taken either.
  fence.insertsStarted++;
  const during = (await spendOf('UTC'))!;
  t.equal(during.clean, false, 'the quota read while an insert ran');
  fence.insertsEnded++;
  reads.reset();
  await budget.refresh(during);
  t.equal(reads.count, 1, 'not taken: a read of its own');

  // Nor a read of other windows: the day has changed since.
  const before = (await spendOf('UTC'))!;
  now = Date.UTC(2026, 2, 21, 0, 5);
  reads.reset();
  s = await budget.refresh(before);
  t.equal(reads.count, 1, "yesterday's windows: a read of its own");
  t.equal(s.daily.spent, 0, 'nothing spent in the new day');
  // Without a fence nothing says whether an insert ran: never taken.
  const loose = new BudgetService(store, () => withProvider('UTC'), { now: () => now });
  const next = await spendOf('UTC');
  reads.reset();
  await loose.refresh(next);
  t.equal(reads.count, 1, 'no fence: a read of its own');
  // An insert that does not end (a store in trouble): between its reads the budget waits a second at most, not for
  // the insert's end (src/store/writer.ts, WriteFence.hold).
  const stuck: WriteFence = { insertsStarted: 1, insertsEnded: 0, settled: () => new Promise<void>(() => undefined), hold: (ms) => settledWithin(stuck, ms).then(() => () => undefined) };
  const began = Date.now();
  reads.reset();
  const held = await new BudgetService(store, () => withProvider('UTC'), { now: () => now, fence: stuck }).refresh();
  t.equal(held.daily.spent, 0, 'its figures');
  t.equal(reads.count, 3, 'read three times, an insert beside each');
  t.ok(Date.now() - began < 10_000, `not held up by the insert (${Date.now() - began} ms)`);
});
