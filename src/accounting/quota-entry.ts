// One provider's quota entry (what /api/quota, the gauges, the alerts and routing read) from the figures a snapshot
// counts (quota.ts: a read of the store, with the calls not stored yet it could take): its window's use evaluated
// against the plan, the provider's usage source's own figures winning where one answers, its cost today and this
// month, its models' hours, and the connection-problem flag.

import type { ProviderConfig } from '../config/types.js';
import { evaluateQuota, type QuotaConfig, type QuotaEvaluation, type QuotaPlan } from '../config/quota-kinds.js';
import type { ProviderModelSums, RecentOutcomes } from '../store/quota-windows.js';
import { MoneySum } from '../store/decimal.js';
import { readingReset, type UsageSources } from './quota-source.js';
import { byModel, sumOf, usedOf, type Totals } from './quota-sums.js';
import { connectionProblem, type ConnectionProblem } from './quota-connection.js';

export interface QuotaEntry extends QuotaEvaluation {
  readonly id: string;
  readonly name: string;
  readonly group: ProviderConfig['group'];
  readonly kind: QuotaConfig['kind'];
  readonly cost: { readonly today: number; readonly month: number; readonly currency: 'USD' };
  /** rolling_hours: the hours of each model in the window. */
  readonly models?: readonly { readonly model: string; readonly used: number }[];
  /** Where `quota.used`/`limit` come from: the gateway's record, or the provider's usage source. */
  readonly source: { readonly kind: 'computed' | 'provider'; readonly computed_used: number; readonly status?: string; readonly fetched_at?: string };
  readonly connection_problem: ConnectionProblem | null;
}

/** A configured provider as a snapshot evaluates it: its config, its quota, and the quota's windows at the read. */
export interface QuotaProvider {
  readonly id: string;
  readonly p: ProviderConfig;
  readonly q: QuotaConfig;
  readonly plan: QuotaPlan;
}

/**
 * Every provider's entry from `sums` (the groups a snapshot counts, by provider and model) at `now`; `recent`: the
 * recent calls of the providers at 0 % in the stored figures (only those were read: one that a call not stored yet
 * took off 0 % is not flagged).
 */
export function quotaEntries(
  sources: UsageSources,
  at: { readonly providers: readonly QuotaProvider[]; readonly sums: readonly ProviderModelSums[]; readonly now: number; readonly recent: ReadonlyMap<string, RecentOutcomes> },
): Promise<QuotaEntry[]> {
  return Promise.all(at.providers.map(async ({ id, p, q, plan }) => {
    const mine = at.sums.filter((g) => g.provider === id);
    const total = sumOf(mine);
    const secondaryUsed = plan.secondary ? mine.reduce((n, g) => n + g.secondaryCalls, 0) : undefined;
    const cost = {
      today: MoneySum.of(mine.map((g) => g.todayCost)),
      month: MoneySum.of(mine.map((g) => g.monthCost)),
      currency: 'USD' as const,
    };
    const models = plan.unit === 'hours' ? byModel(mine.filter((g) => g.rows > 0)) : undefined;
    const problem = total.tokens === 0 ? connectionProblem(p, at.recent.get(id)) : null;
    const evaluated = await evaluateProvider(sources, { id, q, plan, now: at.now, sums: total, secondaryUsed });
    return { id, name: p.name ?? id, group: p.group, kind: q.kind, ...evaluated.evaluation, cost, ...(models ? { models } : {}), source: evaluated.source, connection_problem: problem };
  }));
}

/** A provider's use against its plan: the gateway's figures, or its usage source's when one has answered. */
async function evaluateProvider(
  sources: UsageSources,
  o: { id: string; q: QuotaConfig; plan: QuotaPlan; now: number; sums: Totals; secondaryUsed: number | undefined },
): Promise<{ evaluation: QuotaEvaluation; source: QuotaEntry['source'] }> {
  const { plan, now, sums, secondaryUsed } = o;
  const secondary = secondaryUsed === undefined ? {} : { secondaryUsed };
  const evaluation = evaluateQuota(plan, { used: usedOf(plan, sums), oldest: sums.oldest, ...secondary }, now);
  const source: QuotaEntry['source'] = { kind: 'computed', computed_used: evaluation.quota.used };
  if (!o.q.source) return { evaluation, source };
  const state = await sources.refresh(o.id, o.q.source);
  const reading = state?.reading;
  if (!reading) return { evaluation, source: state ? { ...source, status: state.status } : source };
  // The provider's own figures win; the reset it gives, when it gives one ahead (readingReset), too.
  const reset = readingReset(reading, now);
  return {
    evaluation: evaluateQuota(
      { ...plan, limit: reading.limit, nextReset: reset ?? plan.nextReset, rollingMs: reset === null ? plan.rollingMs : null },
      { used: reading.used, oldest: sums.oldest, ...secondary },
      now,
    ),
    source: { kind: 'provider', computed_used: source.computed_used, status: state.status, fetched_at: new Date(reading.fetchedAt).toISOString() },
  };
}
