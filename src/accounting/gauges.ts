// The gauges read at scrape time from the accounting side (quota, budget) and the router (cooldowns). They live here,
// above telemetry, so that telemetry imports nothing of routing or accounting: the metrics module only knows records.
// A scrape never queries the store: quota and spend come from the latest snapshots the alert evaluation keeps current
// (it refreshes both every 15 s and about a second after each record; /api/quota refreshes the quota's too), so a
// scrape costs nothing while ClickHouse is slow or down, and /metrics keeps answering through an outage.

import { Gauge } from 'prom-client';
import type { Config } from '../config/types.js';
import { connectionsOf } from '../config/connections.js';
import type { Router } from '../routing/router.js';
import { METRIC } from '../telemetry/names.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { QuotaService } from './quota.js';
import type { BudgetService } from './budget.js';

/** Remaining cooldown per provider connection, read at scrape time. */
export function watchCooldowns(metrics: Metrics, config: () => Config, router: Router): void {
  new Gauge({
    name: METRIC.cooldownSeconds, help: 'Seconds until a cooling provider connection is used again (0: not cooling).',
    labelNames: ['provider', 'connection'], registers: [metrics.registry],
    collect() {
      this.reset();
      for (const [pid, p] of Object.entries(config().providers)) {
        for (const c of connectionsOf(pid, p)) this.set({ provider: pid, connection: c.name }, router.cooldowns.remainingMs(c.id) / 1000);
      }
    },
  });
}

/** Quota gauges from the quota engine's latest snapshot (the same numbers as /api/quota). */
export function watchQuota(metrics: Metrics, quota: QuotaService): void {
  const registers = [metrics.registry];
  const snapshot = () => quota.latest ?? [];
  new Gauge({
    name: METRIC.quotaUsedRatio, help: 'Quota used as a ratio of its limit (1 = exhausted; above 1 when over).', labelNames: ['provider'], registers,
    collect() {
      this.reset();
      for (const e of snapshot()) if (e.quota.limit) setFinite(this, { provider: e.id }, e.quota.used / e.quota.limit);
    },
  });
  new Gauge({
    name: METRIC.quotaRemaining, help: 'Quota remaining, in its unit (hours, tokens or requests).', labelNames: ['provider', 'unit'], registers,
    collect() {
      this.reset();
      for (const e of snapshot()) if (e.quota.remaining !== null) setFinite(this, { provider: e.id, unit: e.quota.unit }, e.quota.remaining);
    },
  });
  new Gauge({
    name: METRIC.quotaResetSeconds, help: 'Seconds until the quota resets (or its oldest usage expires).', labelNames: ['provider'], registers,
    collect() {
      this.reset();
      for (const e of snapshot()) if (e.reset.countdown_s !== null) setFinite(this, { provider: e.id }, e.reset.countdown_s);
    },
  });
}

/** A series only for a finite value: no gauge is exported as +Inf or NaN (docs/quota.md), whatever a figure became. */
function setFinite<L extends string>(gauge: Gauge<L>, labels: Partial<Record<L, string>>, value: number): void {
  if (Number.isFinite(value)) gauge.set(labels, value);
}

/** Spend and budget gauges from the budget engine's latest state (the budget's time zone). */
export function watchBudget(metrics: Metrics, budget: BudgetService): void {
  const registers = [metrics.registry];
  new Gauge({
    name: METRIC.spend, help: 'Billed spend in USD in the current budget day and month (budgets.timezone, default UTC).', labelNames: ['window'], registers,
    collect() {
      const s = budget.latest;
      if (s === null) return this.reset();
      this.set({ window: 'today' }, s.daily.spent);
      this.set({ window: 'month' }, s.monthly.spent);
    },
  });
  new Gauge({
    name: METRIC.budgetLimit, help: 'The configured budgets in USD (absent when not set).', labelNames: ['window'], registers,
    collect() {
      this.reset();
      const s = budget.latest;
      if (s?.daily.limit != null) this.set({ window: 'daily' }, s.daily.limit);
      if (s?.monthly.limit != null) this.set({ window: 'monthly' }, s.monthly.limit);
    },
  });
}

