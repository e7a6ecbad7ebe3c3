// A provider's figures from the groups a quota read gives (one per provider and model; quota.ts): their totals, the
// `used` figure of the quota's unit, and rolling_hours' hours per model.

import type { Sums } from '../store/aggregate.js';
import { msToHours, type QuotaPlan } from '../config/quota-kinds.js';
import { MoneySum } from '../store/decimal.js';

const round4 = (v: number): number => Number(v.toFixed(4));

export type Totals = Pick<Sums, 'rows' | 'tokens' | 'cost' | 'durationMs' | 'oldest' | 'dispatched'>;

export function sumOf(groups: readonly Totals[]): Totals {
  let oldest: number | null = null;
  const t = { rows: 0, tokens: 0, durationMs: 0, dispatched: 0 };
  const cost = new MoneySum();
  for (const g of groups) {
    t.rows += g.rows;
    t.dispatched += g.dispatched;
    t.tokens += g.tokens;
    cost.add(g.cost);
    t.durationMs += g.durationMs;
    if (g.oldest !== null && (oldest === null || g.oldest < oldest)) oldest = g.oldest;
  }
  return { ...t, cost: cost.value, oldest };
}

/** rolling_hours: the hours of each model in the window. */
export function byModel(groups: readonly (Totals & { model?: string })[]): { model: string; used: number }[] {
  const ms = new Map<string, number>();
  for (const g of groups) ms.set(g.model!, (ms.get(g.model!) ?? 0) + g.durationMs);
  return [...ms].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([model, d]) => ({ model, used: round4(msToHours(d)) }));
}

export function usedOf(plan: QuotaPlan, s: Totals): number {
  switch (plan.unit) {
    case 'hours':
      return round4(msToHours(s.durationMs));
    case 'requests':
      // The calls that went out: a request the gateway refused before any call is a row, not a request to the provider.
      return s.dispatched;
    default:
      return s.tokens;
  }
}
