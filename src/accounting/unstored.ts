// The calls this process published, and the rows an earlier process left in the spool, that the batch writer has not
// reported stored, for the quota (src/accounting/quota.ts): each as its row will be in the quota's read (its provider,
// model, start, total tokens, cost, duration), added to what a read gives until the writer's `written` event names it.
// The budget reads the same list (budget.ts: its cost since each of its windows' starts).

import { BILLED_KINDS, type RecordKind, type UsageRecord } from '../ledger/record.js';
import type { RequestRow } from '../store/rows.js';
import type { ProviderModelSums } from '../store/quota-windows.js';
import { numberUnits, unitsNumber } from '../store/decimal.js';

/** A provider's windows as the quota reads them: the quota's [from, to), daily_requests' month. */
export interface Span {
  readonly from: number;
  readonly to: number;
  readonly secondary?: { readonly from: number; readonly to: number };
}

interface Unstored {
  readonly provider: string;
  readonly model: string;
  /** Its row's `ts`: the request's start. */
  readonly at: number;
  readonly tokens: number;
  /** Its cost in 10^-12 USD, so sums of many are exact and cost no conversion each (src/store/decimal.ts). */
  readonly cost: bigint;
  readonly durationMs: number;
}

type Group = { -readonly [K in keyof ProviderModelSums]: ProviderModelSums[K] };

/** The most a time zone is ahead of UTC (UTC+14:00): how much earlier than UTC's a budget's local day or month starts. */
const KEPT_BEFORE_MS = 14 * 3_600_000;

export class UnstoredCalls {
  readonly #calls = new Map<string, Unstored>();
  #published = 0;

  /** Records published so far (a count that only grows). */
  get published(): number {
    return this.#published;
  }

  /** A call ended (its record was published): counted until its row is stored. */
  add(r: UsageRecord): void {
    // What its row will hold (src/store/rows.ts): the start as `ts`, the cost to the 12 decimals stored.
    this.#calls.set(r.requestId, { provider: r.provider, model: r.model, at: r.startedAt, tokens: r.totalTokens, cost: units(r.cost.cost), durationMs: r.latency.totalMs });
    this.#published++;
  }

  /**
   * A row an earlier process left in the spool (src/store/spool.ts, at open): counted as this process's own calls are
   * until the writer reports it stored, so a restart while the store refuses inserts does not read as usage given back.
   * Only billed kinds, as `published` takes them (BILLED_KINDS); a row without the columns it needs is passed over.
   */
  addRow(row: RequestRow): void {
    const { request_id: id, kind, provider, model, ts, total_tokens: tokens, cost, duration_ms: ms } = row;
    if (typeof id !== 'string' || typeof provider !== 'string' || typeof model !== 'string' || typeof ts !== 'number') return;
    if (!BILLED_KINDS.includes(kind as RecordKind)) return;
    this.#calls.set(id, { provider, model, at: ts, tokens: Number(tokens) || 0, cost: units(Number(cost)), durationMs: Number(ms) || 0 });
    this.#published++;
  }

  /** These request ids' rows are stored: a read holds them from now on. */
  stored(ids: readonly string[]): void {
    for (const id of ids) this.#calls.delete(id);
  }

  /** The cost of the calls that started at or after each of `froms` (the budget's windows). */
  costSince(froms: readonly number[]): number[] {
    const out = froms.map(() => 0n);
    for (const u of this.#calls.values()) {
      for (let i = 0; i < froms.length; i++) if (u.at >= froms[i]!) out[i]! += u.cost;
    }
    return out.map(unitsNumber);
  }

  /**
   * The calls as groups like the read's (one per provider and model): each in its provider's windows as its row will
   * be. A call older than `oldest` (every window and this UTC month) by more than a time zone can be ahead of UTC
   * (KEPT_BEFORE_MS) counts nowhere any more and is forgotten (a row the store refused, or one dropped from a full
   * spool, is never reported stored); within it, the budget's local day and month, which the list also feeds, may
   * still count it (a zone east of UTC starts its month before UTC's). Calls of providers `spans` lacks: none.
   */
  groups(spans: ReadonlyMap<string, Span>, today: number, month: number, oldest: number): ProviderModelSums[] {
    const out = new Map<string, Group>();
    // Each group's costs (this window, today, this month) in 10^-12 USD, made numbers once at the end.
    const sums = new Map<Group, [bigint, bigint, bigint]>();
    for (const [id, u] of this.#calls) {
      if (u.at < oldest - KEPT_BEFORE_MS) {
        this.#calls.delete(id);
        continue;
      }
      const w = spans.get(u.provider);
      if (w === undefined) continue;
      const key = `${u.provider}\u0000${u.model}`;
      let g = out.get(key);
      if (g === undefined) {
        // recentRows: the connection-problem flag reads stored rows only (`recentOutcomes`).
        g = { provider: u.provider, model: u.model, rows: 0, tokens: 0, cost: 0, durationMs: 0, oldest: null, secondaryRows: 0, todayCost: 0, monthCost: 0, recentRows: 0 };
        out.set(key, g);
        sums.set(g, [0n, 0n, 0n]);
      }
      const s = sums.get(g)!;
      if (u.at >= w.from && u.at < w.to) {
        g.rows++;
        g.tokens += u.tokens;
        s[0] += u.cost;
        g.durationMs += u.durationMs;
        if (g.oldest === null || u.at < g.oldest) g.oldest = u.at;
      }
      if (w.secondary !== undefined && u.at >= w.secondary.from && u.at < w.secondary.to) g.secondaryRows++;
      if (u.at >= today) s[1] += u.cost;
      if (u.at >= month) s[2] += u.cost;
    }
    for (const [g, [cost, today, month]] of sums) Object.assign(g, { cost: unitsNumber(cost), todayCost: unitsNumber(today), monthCost: unitsNumber(month) });
    return [...out.values()];
  }
}

/** A call's cost in 10^-12 USD; 0 for one that is not a finite number (a row the spool could not say it for). */
const units = (usd: number): bigint => (Number.isFinite(usd) ? numberUnits(usd) : 0n);
