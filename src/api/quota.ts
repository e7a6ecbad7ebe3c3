// GET /api/quota: one entry per configured provider. This first version carries the routing state (issue 4): the
// cooldown of each provider connection, so a user can see why a combo skips a provider and until when. The quota,
// reset and cost fields of the spec's entry are computed from ClickHouse by the quota engine.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import { connectionsOf } from '../routing/connections.js';
import type { Router } from '../routing/router.js';

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

export const quotaRoutes: FastifyPluginAsync<{ config: ConfigHolder; router: Router; now?: () => number }> = async (app, { config, router, now = Date.now }) => {
  app.get('/api/quota', async () => {
    const t = now();
    return {
      providers: Object.entries(config.current.providers).map(([id, p]) => ({
        id,
        name: p.name ?? id,
        group: p.group,
        connections: connectionsOf(id, p).map((c) => c.name),
        cooldown: cooldownView(router, id, t),
      })),
    };
  });
};
