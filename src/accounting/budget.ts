// Budgets (spec item 5, DESIGN.md decision 10): daily and monthly amounts in USD, in the budget's time zone
// (default UTC). Spend = the billed cost in ClickHouse for the window (through the rollup) plus the records this
// process has published but the writer has not yet confirmed written, so a crossing is seen before the batch lands.
// The latest state answers the routing step's question (is the daily budget exceeded?) without a query.

import type { Config } from '../config/types.js';
import type { BudgetGate } from '../routing/auto-switch.js';
import { aggregateWindows } from '../store/aggregate.js';
import type { WriteFence } from '../store/write-fence.js';
import type { Store } from '../store/client.js';
import { BILLED_KINDS, type UsageRecord } from '../ledger/record.js';
import { dayBounds, monthBounds } from '../core/tz.js';
import { UnstoredCalls } from './unstored.js';
import { MoneySum } from '../store/decimal.js';

const round = (v: number): number => Number(v.toFixed(12));

/**
 * The budget's windows at `now`: its day and its month in `budgets.timezone` (what `refresh` reads and reports). When
 * they start where UTC's do, the quota's read, which sums every provider's cost today and this month, gives the
 * budget its stored spend (SharedSpend).
 */
export function budgetWindows(cfg: Config, now: number): { tz: string; day: ReturnType<typeof dayBounds>; month: ReturnType<typeof monthBounds> } {
  const tz = cfg.budgets.timezone ?? 'UTC';
  return { tz, day: dayBounds(now, tz), month: monthBounds(now, tz) };
}

/**
 * The billed cost stored from each of `froms` to the read's end, summed by another read of the same rows (the quota's,
 * src/accounting/quota.ts: BILLED_KINDS, the rollups, every provider) and the writer's counts when it began: the budget
 * takes it instead of reading the store itself when no insert was running then and none has begun since, the condition
 * its own read checks (#spent), so its records not yet confirmed written are exactly the ones this read lacks.
 */
export interface SharedSpend {
  readonly froms: readonly number[];
  readonly costs: readonly number[];
  /** The writer's `insertsStarted` when the read began, and whether every insert begun had ended by then. */
  readonly insertsStarted: number;
  readonly clean: boolean;
}

export interface BudgetWindow {
  /** USD; null when no budget is set for the window. */
  readonly limit: number | null;
  readonly spent: number;
  readonly percentage: number | null;
  readonly remaining: number | null;
  /** The local date (`YYYY-MM-DD`) or month (`YYYY-MM`). */
  readonly window: string;
  readonly from: string;
  readonly resets_at: string;
  readonly resets_in_s: number;
}

export interface BudgetState {
  readonly timezone: string;
  readonly daily: BudgetWindow;
  readonly monthly: BudgetWindow & { readonly projection: number; readonly days: number; readonly day_of_month: number };
  readonly auto_switch: { readonly enabled: boolean; readonly to: string | null; readonly active: boolean };
  readonly at: number;
}

export class BudgetService implements BudgetGate {
  readonly #store: Store;
  readonly #config: () => Config;
  readonly #now: () => number;
  /** Published billed records not yet confirmed written (in the gateway, the list the quota reads too: app.ts). */
  readonly #unconfirmed: UnstoredCalls;
  #latest: BudgetState | null = null;
  readonly #realClock: boolean;
  /** The stored (ClickHouse) part of the spend, by window start, from the last read that succeeded. */
  readonly #storedFigures = new Map<number, number>();

  readonly #fence: WriteFence | null;

  /** `fence`: the batch writer whose `written` events clear the records not yet confirmed (see #spent). */
  /** `unstored`: the list of records not yet written to keep (one the quota reads too); its own otherwise. */
  constructor(store: Store, config: () => Config, opts: { now?: () => number; fence?: WriteFence; unstored?: UnstoredCalls } = {}) {
    this.#unconfirmed = opts.unstored ?? new UnstoredCalls();
    this.#store = store;
    this.#config = config;
    this.#now = opts.now ?? Date.now;
    this.#realClock = opts.now === undefined;
    this.#fence = opts.fence ?? null;
  }

  /** A record was published (ledger sink). */
  published(r: UsageRecord): void {
    if (BILLED_KINDS.includes(r.kind)) this.#unconfirmed.add(r);
  }

  /** The writer stored the rows of these request ids (they are in ClickHouse from now on). */
  written(ids: readonly string[]): void {
    this.#unconfirmed.stored(ids);
  }

  /** The latest state (refresh() keeps it current). */
  get latest(): BudgetState | null {
    return this.#latest;
  }

  dailyExceeded(): boolean {
    const s = this.#latest;
    if (s === null || s.daily.limit === null) return false;
    // The state belongs to a day: once that day is over, it says nothing about the new one.
    return s.daily.spent >= s.daily.limit && this.#now() < Date.parse(s.daily.resets_at);
  }

  /**
   * Read the spend and work out the state. `shared`: another read's figures for the same windows (the alert evaluator
   * gives the quota's, taken just before), used instead of a read of its own when they are exact (SharedSpend).
   */
  async refresh(shared: SharedSpend | null = null): Promise<BudgetState> {
    const cfg = this.#config();
    const now = this.#now();
    const { tz, day, month } = budgetWindows(cfg, now);
    const [daySpent, monthSpent] = (await this.#spent([day.from, month.from], now, shared)) as [number, number];
    const window = (limit: number | undefined, spent: number, key: string, from: number, to: number): BudgetWindow => ({
      limit: limit ?? null,
      spent: round(spent),
      percentage: limit === undefined ? null : limit === 0 ? 100 : Number(((spent / limit) * 100).toFixed(2)),
      remaining: limit === undefined ? null : round(Math.max(0, limit - spent)),
      window: key,
      from: new Date(from).toISOString(),
      resets_at: new Date(to).toISOString(),
      resets_in_s: Math.max(0, Math.ceil((to - now) / 1000)),
    });
    const daily = window(cfg.budgets.daily_usd, daySpent, day.date, day.from, day.to);
    // Projection: the month-to-date daily average over the days so far (today counted by the part elapsed).
    const elapsedDays = Math.max((now - month.from) / 86_400_000, 1 / 24);
    const projection = round((monthSpent / elapsedDays) * month.days);
    const monthly = { ...window(cfg.budgets.monthly_usd, monthSpent, month.month, month.from, month.to), projection, days: month.days, day_of_month: month.dayOfMonth };
    const sw = cfg.budgets.auto_switch;
    const state: BudgetState = {
      timezone: tz, daily, monthly, at: now,
      auto_switch: { enabled: sw.enabled, to: sw.to ?? null, active: false },
    };
    this.#latest = state;
    const active = sw.enabled && this.dailyExceeded();
    this.#latest = { ...state, auto_switch: { ...state.auto_switch, active } };
    return this.#latest;
  }

  /**
   * ClickHouse's figure for each window [from, now] plus what this process published and the writer has not stored
   * yet. While the store is down, the last figures read for the same windows stand in for the first part (nothing is
   * written meanwhile, so they are still exact for this process's traffic); with none, the error goes to the caller.
   */
  async #spent(froms: readonly number[], now: number, shared: SharedSpend | null): Promise<number[]> {
    const withUnconfirmed = (stored: readonly number[]) => this.#unconfirmed.costSince(froms, stored);
    // Reads run beside inserts (a server, the embedded store's read connections): a read an insert overlapped may
    // or may not hold that insert's rows, which are still unconfirmed until its `written` event, so it is read again
    // once the insert is over (twice at most; the writer waits its flush interval between inserts), or once a second
    // has passed (an insert held up by a store in trouble: INSERT_WAIT_MS).
    const f = this.#fence;
    if (shared !== null && f !== null && shared.clean && shared.insertsStarted === f.insertsStarted && sameInstants(shared.froms, froms)) {
      froms.forEach((from, i) => this.#storedFigures.set(from, shared.costs[i]!));
      return withUnconfirmed(shared.costs);
    }
    for (let attempt = 1; ; attempt++) {
      // No insert begins while it reads (WriteFence.hold) from the second try: a backlog going in back to back.
      const release = f === null || attempt === 1 ? undefined : await f.hold();
      const started = f?.insertsStarted ?? 0;
      const clean = f === null || started === f.insertsEnded;
      const spent = withUnconfirmed(await this.#stored(froms, now).finally(release));
      if (f === null || (clean && f.insertsStarted === started) || attempt === 3) return spent;
    }
  }

  /** The stored spend of every window [from, now], in ONE read when the windows start on an hour (aggregateWindows). */
  async #stored(froms: readonly number[], now: number): Promise<number[]> {
    try {
      const groups = await aggregateWindows(this.#store, {
        windows: froms.map((from) => ({ from, to: now + 1 })), filters: { kinds: BILLED_KINDS }, openEnd: this.#realClock, sums: ['cost'],
      });
      const stored = groups.map((g) => MoneySum.of(g.map((x) => x.cost)));
      froms.forEach((from, i) => this.#storedFigures.set(from, stored[i]!));
      for (const k of this.#storedFigures.keys()) if (k < now - 40 * 86_400_000) this.#storedFigures.delete(k);
      return stored;
    } catch (err) {
      const last = froms.map((from) => this.#storedFigures.get(from));
      if (last.some((x) => x === undefined)) throw err;
      return last as number[];
    }
  }
}

function sameInstants(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
