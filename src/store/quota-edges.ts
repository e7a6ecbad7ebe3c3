// The partial first hours of the quota's rolling windows, kept between reads. A rolling window starts mid-hour, so its
// first hour is read from the raw rows: the third table of the quota's one read (src/store/quota-windows.ts), about a
// quarter of its time at 10M rows (docs/benchmarks.md). Once that hour has ended, its rows change only when rows of it
// are inserted, and every insert is counted by the hourly rollup, whose rows for that hour the quota's read returns
// anyway. So the hour's raw rows are read once (per request time, provider and model), kept here with their totals,
// and used as long as the rollup's totals of that hour, in the same read, still equal theirs; when they differ (a
// replica's backlog, a replay), the rows are read again. An hour whose raw rows never agree with its rollup (the same
// request inserted twice in two batches) is read raw as before.

import { decimalUnits, unitsText } from './decimal.js';
import { num, type RawGroup } from './aggregate.js';
import { HOUR_MS } from '../core/windows.js';

/** A window's partial first hour [from, to): the raw rows of `providers` in it count in their own windows only. */
export interface EdgeRange {
  readonly providers: readonly string[];
  readonly from: number;
  readonly to: number;
}

/** What a read adds up, per provider and model: the figures the quota's windows use. */
interface Sum {
  rows: number;
  /** Of `rows`, those whose request went out upstream: what a request quota counts. */
  dispatched: number;
  tokens: number;
  cost: bigint;
  durationMs: number;
  oldest: number;
}

/** An hour's raw rows of some providers, grouped by request time (ms), provider and model, with the hour's totals. */
interface Kept {
  /** The earliest instant a read asked for: groups before it are not kept (a window's start only moves on). */
  readonly from: number;
  readonly groups: readonly { readonly at: number; readonly key: string; readonly sum: Sum }[];
  readonly totals: ReadonlyMap<string, Sum>;
}

/** How a range is read this time: raw as before, from what is kept, or raw per request time to be kept (`tag`). */
export type EdgePlan =
  | { readonly kind: 'raw' }
  | { readonly kind: 'kept'; readonly key: string; readonly hour: number; readonly kept: Kept }
  | { readonly kind: 'fill'; readonly key: string; readonly hour: number; readonly tag: number };

/** The `edge` column of a fill's rows: FILL_TAG + the range's index (0 is the rollups', 1 the raw edges'). */
export const FILL_TAG = 2;
/** A key whose fills disagreed with the rollup this many times in a row is read raw until its hour changes. */
const MISMATCHES = 2;

/** A provider and model as one key (the quota's read keys its groups so too). */
export const keyOf = (provider: string, model: string): string => `${provider}\u0000${model}`;

/** `keyOf`'s provider and model again. */
function partsOf(key: string): { provider: string; model: string } {
  const cut = key.indexOf('\u0000');
  return { provider: key.slice(0, cut), model: key.slice(cut + 1) };
}

export class EdgeCache {
  readonly #kept = new Map<string, Kept>();
  readonly #mismatches = new Map<string, number>();

  /**
   * Each range's plan. `hourly(h)`: whether the read returns the hourly rollup's rows of hour `h`, which check what is
   * kept (not when the hour lies in a day taken from the daily rollup). Only an hour that has ended (before `now`) and
   * that the range reaches the end of is kept.
   */
  plan(ranges: readonly EdgeRange[], kinds: readonly string[], now: number, hourly: (hour: number) => boolean): EdgePlan[] {
    const used = new Set<string>();
    const plans = ranges.map((r, i): EdgePlan => {
      const hour = Math.floor(r.from / HOUR_MS) * HOUR_MS;
      if (r.to !== hour + HOUR_MS || r.to > now || !hourly(hour)) return { kind: 'raw' };
      const key = `${hour} ${kinds.join(',')} ${[...r.providers].sort().join(',')}`;
      used.add(key);
      if ((this.#mismatches.get(key) ?? 0) >= MISMATCHES) return { kind: 'raw' };
      const kept = this.#kept.get(key);
      return kept !== undefined && kept.from <= r.from ? { kind: 'kept', key, hour, kept } : { kind: 'fill', key, hour, tag: FILL_TAG + i };
    });
    // Only what this read's ranges use is kept: an hour gone by, a window changed.
    for (const k of this.#kept.keys()) if (!used.has(k)) this.#kept.delete(k);
    for (const k of this.#mismatches.keys()) if (!used.has(k)) this.#mismatches.delete(k);
    return plans;
  }

  /**
   * The edge rows (`edge` = 1, one per provider and model, as the raw edges' read returns them) of every range not
   * read raw, from the read's `rows`: a fill's groups are kept when their hour's totals equal the rollup's; what is
   * kept is used when they still do, and read again (`refill`, the fills' SQL for those ranges alone) when not.
   */
  async settle(
    ranges: readonly EdgeRange[], plans: readonly EdgePlan[], rows: readonly RawGroup[],
    refill: (plans: readonly (EdgePlan & { kind: 'fill' })[]) => Promise<RawGroup[]>,
  ): Promise<RawGroup[]> {
    const rollup = new Map<number, Map<string, Sum>>();
    for (const p of plans) if (p.kind !== 'raw') rollup.set(p.hour, new Map());
    const fills = new Map<number, RawGroup[]>();
    for (const r of rows) {
      const edge = num(r.edge);
      if (edge >= FILL_TAG) {
        const list = fills.get(edge);
        if (list === undefined) fills.set(edge, [r]);
        else list.push(r);
      } else if (edge === 0) {
        const hourly = rollup.get(num(r.at_s) * 1000);
        if (hourly !== undefined) add(hourly, keyOf(String(r.provider), String(r.model)), sumOf(r));
      }
    }
    const out: RawGroup[] = [];
    const again: (EdgePlan & { kind: 'fill' })[] = [];
    // Each range's hour as the rollup has it, for its providers: what its kept or filled rows must equal.
    const hourlyOf = plans.map((p, i) => (p.kind === 'raw' ? new Map<string, Sum>() : only(rollup.get(p.hour)!, ranges[i]!.providers)));
    for (const [i, p] of plans.entries()) {
      if (p.kind === 'raw') continue;
      const range = ranges[i]!;
      const hourly = hourlyOf[i]!;
      if (p.kind === 'kept') {
        if (same(p.kept.totals, hourly)) out.push(...edgeRows(p.kept, range, p.hour));
        else {
          this.#kept.delete(p.key);
          again.push({ kind: 'fill', key: p.key, hour: p.hour, tag: FILL_TAG + i });
        }
      } else out.push(...this.#filled(p, range, fills.get(p.tag) ?? [], hourly));
    }
    if (again.length > 0) {
      const read = await refill(again);
      for (const p of again) {
        const i = p.tag - FILL_TAG;
        out.push(...this.#filled(p, ranges[i]!, read.filter((r) => num(r.edge) === p.tag), hourlyOf[i]!));
      }
    }
    return out;
  }

  /** A fill's groups: kept when their totals equal the rollup's for the hour; this read's edge rows either way. */
  #filled(p: EdgePlan & { kind: 'fill' }, range: EdgeRange, groups: readonly RawGroup[], hourly: ReadonlyMap<string, Sum>): RawGroup[] {
    const totals = new Map<string, Sum>();
    const all = groups.map((g) => {
      const key = keyOf(String(g.provider), String(g.model));
      const sum = sumOf(g);
      add(totals, key, sum);
      return { at: sum.oldest, key, sum };
    });
    const kept: Kept = { from: range.from, groups: all.filter((g) => g.at >= range.from), totals };
    if (same(totals, hourly)) {
      this.#kept.set(p.key, kept);
      this.#mismatches.delete(p.key);
    } else this.#mismatches.set(p.key, (this.#mismatches.get(p.key) ?? 0) + 1);
    return edgeRows(kept, range, p.hour);
  }
}

function sumOf(r: RawGroup): Sum {
  return { rows: num(r.rows), dispatched: num(r.dispatched), tokens: num(r.tokens), cost: decimalUnits(String(r.cost)), durationMs: num(r.duration_ms), oldest: num(r.oldest) };
}

function add(m: Map<string, Sum>, key: string, s: Sum): void {
  const t = m.get(key);
  if (t === undefined) m.set(key, { ...s });
  else {
    t.rows += s.rows;
    t.dispatched += s.dispatched;
    t.tokens += s.tokens;
    t.cost += s.cost;
    t.durationMs += s.durationMs;
    t.oldest = Math.min(t.oldest, s.oldest);
  }
}

/** The totals of `providers` only (keys are `keyOf`'s). */
function only(m: ReadonlyMap<string, Sum>, providers: readonly string[]): Map<string, Sum> {
  const set = new Set(providers);
  return new Map([...m].filter(([k, s]) => s.rows > 0 && set.has(partsOf(k).provider)));
}

/** The same models with the same figures (both hold only models with rows: `only`'s, and raw groups of a row at least). */
function same(a: ReadonlyMap<string, Sum>, b: ReadonlyMap<string, Sum>): boolean {
  if (a.size !== b.size) return false;
  return [...a].every(([k, s]) => {
    const t = b.get(k);
    return t !== undefined && t.rows === s.rows && t.dispatched === s.dispatched && t.tokens === s.tokens && t.cost === s.cost && t.durationMs === s.durationMs && t.oldest === s.oldest;
  });
}

/** The kept groups in [range.from, range.to) summed per provider and model, as edge rows of the read. */
function edgeRows(kept: Kept, range: EdgeRange, hour: number): RawGroup[] {
  const sums = new Map<string, Sum>();
  for (const g of kept.groups) if (g.at >= range.from && g.at < range.to) add(sums, g.key, g.sum);
  return [...sums].map(([key, s]) => ({
    ...partsOf(key), at_s: hour / 1000, edge: 1,
    rows: s.rows, dispatched: s.dispatched, tokens: s.tokens, cost: unitsText(s.cost), duration_ms: s.durationMs, oldest: s.oldest,
  }));
}
