// Quota's read: every provider's quota window, its secondary window and its cost today and this month, per model, from
// the rollups (and the raw rows of the windows' partial first hours) through the sources of `aggregate()`
// (src/store/aggregate.ts), so quota agrees with every usage report to the cent.

import type { RecordKind } from '../ledger/record.js';
import type { Store } from './client.js';
import { deduped, num, split, summedRaw, summedSourcesOf, type RawGroup, type Sums } from './aggregate.js';
import { decimalUnits, unitsNumber } from './decimal.js';
import { FILL_TAG, keyOf, type EdgeCache, type EdgePlan, type EdgeRange } from './quota-edges.js';
import { DAY_MS, HOUR_MS } from '../core/windows.js';

export interface ProviderWindow {
  readonly provider: string;
  readonly from: number;
  readonly to: number;
}

/** One provider's windows for `providerWindows`: hour-aligned starts (the partial first hour is an `edges` window). */
export interface QuotaWindows {
  readonly provider: string;
  /** The quota window [from, to), `from` on an hour. */
  readonly from: number;
  readonly to: number;
  /** daily_requests: the monthly total's [from, to). */
  readonly secondary?: { readonly from: number; readonly to: number };
}

export interface ProviderModelSums extends Totals {
  readonly provider: string;
  readonly model: string;
  /** daily_requests: the calls (dispatched rows) in the secondary window (the month). */
  readonly secondaryCalls: number;
  readonly todayCost: number;
  readonly monthCost: number;
  /** Calls in the rollup hours and days that reach past `recentFrom` (an upper bound of the calls since then). */
  readonly recentRows: number;
}

type Totals = Pick<Sums, 'rows' | 'tokens' | 'cost' | 'durationMs' | 'oldest' | 'dispatched'>;

/**
 * Every provider's quota window, its secondary window, and its cost today and this month, per model (and `cost`: every
 * provider's, configured or not, today and this month, added exactly: the budget's stored spend when its day and
 * month are UTC's, src/accounting/budget.ts SharedSpend), in ONE read of
 * [start, to). ClickHouse returns the sums per provider, model and rollup row time (an hour, or a whole day of the
 * daily rollup, which no window edge cuts), and each is added here into the windows of its own provider: a query with
 * a conditional sum per window and figure took the engine 2x longer to plan than to run (docs/benchmarks.md). Money
 * is added exactly (decimal text, src/store/decimal.ts).
 */
export async function providerWindows(
  store: Store,
  q: {
    start: number; to: number; today: number; month: number; windows: readonly QuotaWindows[]; kinds: readonly RecordKind[]; openEnd?: boolean;
    /** The partial first hours of windows that do not start on an hour: raw rows, added to their provider's window only. */
    edges?: readonly ProviderWindow[];
    /** For `recentRows`: an instant in [start, to). */
    recentFrom?: number;
    /** Where the partial first hours that have ended are kept between reads (the quota service's). */
    edgeCache?: EdgeCache;
  },
): Promise<{ groups: ProviderModelSums[]; cost: { today: number; month: number } | null }> {
  // Nothing is read without a window (no provider configured): nor is the cost.
  if (q.windows.length === 0) return { groups: [], cost: null };
  const cuts = [q.today, q.month, ...q.windows.flatMap((w) => [w.from, w.to, ...(w.secondary ? [w.secondary.from, w.secondary.to] : [])])];
  const { a, b, c, d } = split(q.start, q.to, q.openEnd, cuts);
  const params: Record<string, unknown> = { from: q.start, to: q.to, a, b, c, d, f_kinds: q.kinds };
  // Windows that start at the same instant (rolling windows of the same length) share one condition.
  const ranges = new Map<string, { from: number; to: number; providers: string[] }>();
  for (const w of q.edges ?? []) {
    const r = ranges.get(`${w.from} ${w.to}`) ?? { from: w.from, to: w.to, providers: [] };
    r.providers.push(w.provider);
    ranges.set(`${w.from} ${w.to}`, r);
  }
  const list = [...ranges.values()];
  // A range whose hour has ended is read once and kept (src/store/quota-edges.ts), checked against the hour's rollup
  // rows that this read returns (hours outside the daily rollup's days).
  const plans = q.edgeCache?.plan(list, q.kinds, q.to - 1, (h) => h >= a && h < b && !(h >= c && h < d)) ?? list.map(() => ({ kind: 'raw' as const }));
  const edges = list.flatMap((w, i) => {
    if (plans[i]!.kind !== 'raw') return [];
    Object.assign(params, { [`ep${i}`]: w.providers, [`ef${i}`]: w.from, [`et${i}`]: w.to });
    return [`(provider IN {ep${i}:Array(String)} AND ts >= fromUnixTimestamp64Milli({ef${i}:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({et${i}:Int64}, 'UTC'))`];
  });
  // Each source summed in the SELECT that reads it, no GROUP BY over their union (summedSourcesOf): a group here is
  // one provider, model and rollup row time of one source already.
  const sources = [
    ...summedSourcesOf(store, 'kind IN {f_kinds:Array(String)}', { from: q.start, a, c, d, b, to: q.to }, QUOTA_COLS, '0 AS edge'),
    ...(edges.length === 0 ? [] : [summedRaw(store, `kind IN {f_kinds:Array(String)} AND (${edges.join(' OR ')})`, QUOTA_COLS, '1 AS edge')]),
    ...plans.flatMap((p) => (p.kind === 'fill' ? [fillSql(store, p, list, params)] : [])),
  ];
  const read = await store.query<RawGroup>(sources.join('\n      UNION ALL'), params);
  const rows = q.edgeCache === undefined ? read : [
    ...read.filter((r) => num(r.edge) < FILL_TAG),
    ...(await q.edgeCache.settle(list, plans, read, (again) => {
      const p: Record<string, unknown> = { f_kinds: q.kinds };
      return store.query<RawGroup>(again.map((f) => fillSql(store, f, list, p)).join('\n      UNION ALL'), p);
    })),
  ];
  const windowOf = new Map(q.windows.map((w) => [w.provider, w]));
  let today = 0n;
  let month = 0n;
  const out = new Map<string, { provider: string; model: string; rows: number; tokens: number; cost: bigint; durationMs: number; oldest: number | null; dispatched: number; secondaryCalls: number; today: bigint; month: bigint; recentRows: number }>();
  for (const r of rows) {
    const provider = String(r.provider);
    const model = String(r.model);
    const key = keyOf(provider, model);
    let s = out.get(key);
    if (s === undefined) {
      s = { provider, model, rows: 0, tokens: 0, cost: 0n, durationMs: 0, oldest: null, dispatched: 0, secondaryCalls: 0, today: 0n, month: 0n, recentRows: 0 };
      out.set(key, s);
    }
    const at = num(r.at_s) * 1000;
    const cost = decimalUnits(String(r.cost));
    const w = windowOf.get(provider);
    // A raw edge row counts in its provider's window and nowhere else: its hour is in the rollup rows too.
    if (num(r.edge) === 1) {
      if (w === undefined) continue;
    } else {
      if (w?.secondary !== undefined && at >= w.secondary.from && at < w.secondary.to) s.secondaryCalls += num(r.dispatched);
      if (at >= q.today) {
        s.today += cost;
        today += cost;
      }
      if (at >= q.month) {
        s.month += cost;
        month += cost;
      }
      // A row of the daily rollup ([c, d)) spans its day; every other row is an hour's (a rollup's, or raw by hour).
      if (q.recentFrom !== undefined && at + (at >= c && at < d ? DAY_MS : HOUR_MS) > q.recentFrom) s.recentRows += num(r.rows);
      if (w === undefined || at < w.from || at >= w.to) continue;
    }
    s.rows += num(r.rows);
    s.dispatched += num(r.dispatched);
    s.tokens += num(r.tokens);
    s.cost += cost;
    s.durationMs += num(r.duration_ms);
    const oldest = num(r.oldest);
    if (num(r.rows) > 0 && (s.oldest === null || oldest < s.oldest)) s.oldest = oldest;
  }
  const groups = [...out.values()].map((s) => ({
    provider: s.provider, model: s.model, rows: s.rows, tokens: s.tokens, cost: unitsNumber(s.cost), durationMs: s.durationMs,
    oldest: s.rows === 0 ? null : s.oldest, dispatched: s.dispatched, secondaryCalls: s.secondaryCalls, todayCost: unitsNumber(s.today), monthCost: unitsNumber(s.month),
    recentRows: s.recentRows,
  }));
  return { groups, cost: { today: unitsNumber(today), month: unitsNumber(month) } };
}

const QUOTA_COLS = { dims: ['provider', 'model'] as const, sums: ['rows', 'tokens', 'cost', 'durationMs', 'oldest', 'dispatched'] as const };

/** The raw rows of a fill's whole hour per request time, provider and model (`oldest`: the time), `edge` its tag. */
function fillSql(store: Store, p: EdgePlan & { kind: 'fill' }, ranges: readonly EdgeRange[], params: Record<string, unknown>): string {
  const i = p.tag - FILL_TAG;
  Object.assign(params, { [`fp${i}`]: ranges[i]!.providers, [`fh${i}`]: p.hour, [`fe${i}`]: p.hour + HOUR_MS });
  const where = `kind IN {f_kinds:Array(String)} AND provider IN {fp${i}:Array(String)}
         AND ts >= fromUnixTimestamp64Milli({fh${i}:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({fe${i}:Int64}, 'UTC')`;
  return summedRaw(store, where, QUOTA_COLS, `${p.tag} AS edge`, false, 'ts');
}

/** A provider's calls in a recent span, for the connection-problem flag: its failures, successes and latest failure. */
export interface RecentOutcomes {
  readonly failures: number;
  readonly successes: number;
  /** The latest failure's error type and HTTP status ('' and 0 without a failure). */
  readonly errorType: string;
  readonly httpStatus: number;
}

/**
 * Every listed provider's calls in [from, to) in ONE read (each request once): a provider the map lacks made none.
 * One read for all of them, not one per provider: the embedded engine runs one query at a time, so reads made one per
 * idle provider queued behind each other (four idle providers took an uncached /api/quota from 35 to 80 ms at 10M
 * rows). The quota asks only for providers whose `recentRows` say they made calls lately.
 */
export async function recentOutcomes(
  store: Store,
  q: { providers: readonly string[]; from: number; to: number; kinds: readonly RecordKind[] },
): Promise<Map<string, RecentOutcomes>> {
  if (q.providers.length === 0) return new Map();
  const where = `provider IN {providers:Array(String)} AND kind IN {kinds:Array(String)}
         AND ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')`;
  const rows = await store.query<RawGroup>(
    `SELECT provider, countIf(status = 'failure') AS failures, countIf(status = 'success') AS successes,
            argMaxIf(error_type, ts, status = 'failure') AS error_type, argMaxIf(http_status, ts, status = 'failure') AS http_status
       FROM ${deduped(store, where, 'request_id, ts, provider, status, error_type, http_status')}
      GROUP BY provider`,
    { providers: q.providers, kinds: q.kinds, from: q.from, to: q.to },
  );
  return new Map(rows.map((r) => [String(r.provider), {
    failures: num(r.failures), successes: num(r.successes), errorType: String(r.error_type ?? ''), httpStatus: num(r.http_status),
  }]));
}
