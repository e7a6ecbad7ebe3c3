// GET /api/quota: one entry per configured provider in the spec's shape (id, name, quota, reset, cost), computed
// from ClickHouse by the quota engine (quota/service.ts), plus remaining, the reset countdown, the provider usage
// source, a connection-problem flag, and the routing state: each connection's cooldown.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import { connectionsOf } from '../config/connections.js';
import type { QuotaService } from '../accounting/quota.js';
import type { Router } from '../routing/router.js';
import { unpricedModels } from '../config/pricing.js';
import { REPORTED_RESOURCES, usedRatio, type ReportedQuota, type ReportedQuotaStore } from '../accounting/reported-quota.js';

/** An instant as ISO 8601, or null when no Date holds it (beyond ±8.64e15 ms, NaN): never throws from a route. */
function iso(ms: number): string | null {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export function cooldownView(router: Router, providerId: string, now: number) {
  const p = router.provider(providerId);
  return {
    cooling: p.cooling,
    until: p.cooling ? iso(p.until) : null,
    remaining_s: p.cooling ? Math.ceil((p.until - now) / 1000) : 0,
    connections: p.connections.map((c) => ({
      name: c.name,
      cooling: c.state !== null,
      until: c.state ? iso(c.state.until) : null,
      remaining_s: c.state ? Math.ceil((c.state.until - now) / 1000) : 0,
      failures: c.state?.failures ?? 0,
      reason: c.state?.reason ?? null,
    })),
  };
}

/** What a provider reported on its responses, beside the computed figures: with its source and age (docs/quota.md). */
export function reportedView(r: ReportedQuota, now: number) {
  const limits: Record<string, unknown> = {};
  for (const resource of REPORTED_RESOURCES) {
    const l = r.limits[resource];
    if (l === undefined) continue;
    const ratio = usedRatio(l);
    limits[resource] = {
      limit: l.limit,
      remaining: l.remaining,
      percentage: ratio === null ? null : Number((ratio * 100).toFixed(2)),
      reset_at: l.resetAt === null ? null : iso(l.resetAt),
      reset_in_s: l.resetAt === null ? null : Math.max(0, Math.ceil((l.resetAt - now) / 1000)),
    };
  }
  return {
    connection: r.connection,
    source: r.source,
    observed_at: iso(r.observedAt),
    age_s: Math.max(0, Math.round((now - r.observedAt) / 1000)),
    limits,
    retry_after_s: r.retryUntil !== null && r.retryUntil > now ? Math.ceil((r.retryUntil - now) / 1000) : null,
  };
}

export const quotaRoutes: FastifyPluginAsync<{ config: ConfigHolder; router: Router; quota: QuotaService; reported?: ReportedQuotaStore; now?: () => number }> = async (
  app, { config, router, quota, reported, now = Date.now },
) => {
  app.get('/api/quota', async () => {
    const entries = await quota.entries();
    const t = now();
    const providers = config.current.providers;
    // Paid models no price covers (YAML or catalog): their cost is recorded as unknown (docs/catalog.md).
    const unpriced = unpricedModels(config.current);
    return {
      providers: entries.map((e) => {
        const p = providers[e.id];
        return {
          ...e,
          connections: p ? connectionsOf(e.id, p).map((c) => c.name) : [],
          cooldown: cooldownView(router, e.id, t),
          pricing: { unpriced_models: unpriced.filter((u) => u.provider === e.id).map((u) => `${u.provider}/${u.model}`) },
          // Empty when the provider reports nothing on its responses: the computed quota above is then all there is.
          reported: (reported?.forProvider(e.id) ?? []).map((r) => reportedView(r, t)),
        };
      }),
    };
  });
};
