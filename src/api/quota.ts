// GET /api/quota: one entry per configured provider in the spec's shape (id, name, quota, reset, cost), computed
// from ClickHouse by the quota engine (quota/service.ts), plus remaining, the reset countdown, the provider usage
// source, a connection-problem flag, and the routing state: each connection's cooldown.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import { connectionsOf } from '../config/connections.js';
import type { QuotaService } from '../accounting/quota.js';
import type { Router } from '../routing/router.js';
import { unpricedModels } from '../config/pricing.js';

const iso = (ms: number): string => new Date(ms).toISOString();

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

export const quotaRoutes: FastifyPluginAsync<{ config: ConfigHolder; router: Router; quota: QuotaService; now?: () => number }> = async (
  app, { config, router, quota, now = Date.now },
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
        };
      }),
    };
  });
};
