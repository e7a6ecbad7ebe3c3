// The gauges read at scrape time from the accounting side (quota, budget) and the router (cooldowns). They live here,
// above telemetry, so that telemetry imports nothing of routing or accounting: the metrics module only knows records.
// Numbers from the store come from each service's cached snapshot (the quota engine's, at most its cache age old; the
// budget's); a scrape never waits longer than STORE_READ_MS for them.

import { Gauge } from 'prom-client';
import type { Config } from '../config/types.js';
import { connectionsOf } from '../config/connections.js';
import type { Router } from '../routing/router.js';
import { METRIC } from '../telemetry/names.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { QuotaService } from './quota.js';
import type { BudgetService } from './budget.js';

/** How long a scrape waits for numbers read from the store before it goes on without them. */
const STORE_READ_MS = 2000;

/**
 * `read()`, or null when it fails or takes longer than STORE_READ_MS: the gauges that come from the store are left
 * out of that scrape, and every other series (tollgate_store_up and the spool's among them) is still served. While
 * a ClickHouse server is down or hangs, /metrics must keep answering: it is how the outage is seen.
 */
async function fromStore<T>(read: () => Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), STORE_READ_MS);
    timer.unref();
  });
  try {
    return await Promise.race([read().catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

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

/** Quota and spend gauges, from the quota engine's snapshot at scrape time (the same numbers as /api/quota). */
export function watchQuota(metrics: Metrics, quota: QuotaService): void {
const registers = [metrics.registry];
  const snapshot = async () => (await fromStore(() => quota.entries())) ?? [];
  new Gauge({
    name: METRIC.quotaUsedRatio, help: 'Quota used as a ratio of its limit (1 = exhausted; above 1 when over).', labelNames: ['provider'], registers,
    async collect() {
      this.reset();
      for (const e of await snapshot()) if (e.quota.limit) this.set({ provider: e.id }, e.quota.used / e.quota.limit);
    },
  });
  new Gauge({
    name: METRIC.quotaRemaining, help: 'Quota remaining, in its unit (hours, tokens or requests).', labelNames: ['provider', 'unit'], registers,
    async collect() {
      this.reset();
      for (const e of await snapshot()) if (e.quota.remaining !== null) this.set({ provider: e.id, unit: e.quota.unit }, e.quota.remaining);
    },
  });
  new Gauge({
    name: METRIC.quotaResetSeconds, help: 'Seconds until the quota resets (or its oldest usage expires).', labelNames: ['provider'], registers,
    async collect() {
      this.reset();
      for (const e of await snapshot()) if (e.reset.countdown_s !== null) this.set({ provider: e.id }, e.reset.countdown_s);
    },
  });
}

/** Spend and budget gauges from the budget engine (the budget's time zone), read at scrape time. */
export function watchBudget(metrics: Metrics, budget: BudgetService): void {
const registers = [metrics.registry];
  new Gauge({
    name: METRIC.spend, help: 'Billed spend in USD in the current budget day and month (budgets.timezone, default UTC).', labelNames: ['window'], registers,
    async collect() {
      const s = await fromStore(() => budget.refresh());
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

