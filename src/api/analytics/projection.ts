// GET /api/usage/projection: what the last 7 full UTC days (today excluded, so a partial day never drags the average
// down) say about a day and a 30-day month: daily average tokens and cost, monthly (x 30), and per provider.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../../config/watch.js';
import { aggregate } from '../../store/aggregate.js';
import type { Store } from '../../store/client.js';
import { CLIENT_KINDS, reportKinds, QueryReader, iso, money, usageKinds } from './params.js';
import { own } from '../../core/own.js';
import { DAY_MS } from '../../core/windows.js';
import { MoneySum, moneyUnits } from '../../store/decimal.js';

export const PROJECTION_DAYS = 7;
const MONTH_DAYS = 30;

const avg = (tokens: number, cost: number) => ({
  daily_average_tokens: Math.round(tokens / PROJECTION_DAYS),
  daily_average_cost: money(cost / PROJECTION_DAYS),
  monthly_tokens: Math.round((tokens * MONTH_DAYS) / PROJECTION_DAYS),
  monthly_cost: money((cost * MONTH_DAYS) / PROJECTION_DAYS),
});

/** The sums the projection reads. */
const SUMS = ['rows', 'tokens', 'cost'] as const;

export const projectionRoutes: FastifyPluginAsync<{ store: Store; config: ConfigHolder; now: () => number }> = async (app, { store, config, now }) => {
  app.get('/api/usage/projection', async (req) => {
    const q = new QueryReader(req.query, ['include_keepalive']);
    const keepalive = q.bool('include_keepalive');
    const to = Math.floor(now() / DAY_MS) * DAY_MS;
    const from = to - PROJECTION_DAYS * DAY_MS;
    const usage = new Set<string>(usageKinds(keepalive));
    const client = new Set<string>(CLIENT_KINDS);
    const groups = await aggregate(store, { from, to, by: ['day', 'kind', 'provider'], filters: { kinds: reportKinds(keepalive) }, sums: SUMS });

    // Money is summed exactly (MoneySum), each group's cost made units once for the three sums it goes to.
    const days = new Map<string, { date: string; requests: number; tokens: number; cost: MoneySum }>();
    for (let d = from; d < to; d += DAY_MS) days.set(iso(d).slice(0, 10), { date: iso(d).slice(0, 10), requests: 0, tokens: 0, cost: new MoneySum() });
    const providers = new Map<string, { tokens: number; cost: MoneySum }>();
    let requests = 0;
    let tokens = 0;
    const costSum = new MoneySum();
    for (const g of groups) {
      const day = days.get(g.day!);
      if (client.has(g.kind!)) {
        requests += g.rows;
        if (day !== undefined) day.requests += g.rows;
      }
      if (!usage.has(g.kind!)) continue;
      tokens += g.tokens;
      const units = moneyUnits(g.cost);
      costSum.addUnits(units);
      if (day !== undefined) {
        day.tokens += g.tokens;
        day.cost.addUnits(units);
      }
      const p = providers.get(g.provider!) ?? { tokens: 0, cost: new MoneySum() };
      p.tokens += g.tokens;
      p.cost.addUnits(units);
      providers.set(g.provider!, p);
    }
    const cost = costSum.value;
    const providerCosts = [...providers.entries()].map(([id, p]) => [id, { tokens: p.tokens, cost: p.cost.value }] as const);
    return {
      basis: 'last_7_full_days',
      days: PROJECTION_DAYS,
      from: iso(from),
      to: iso(to),
      currency: 'USD',
      totals: { requests, tokens, cost: money(cost) },
      daily_average: { requests: Number((requests / PROJECTION_DAYS).toFixed(2)), tokens: Math.round(tokens / PROJECTION_DAYS), cost: money(cost / PROJECTION_DAYS) },
      monthly: { tokens: Math.round((tokens * MONTH_DAYS) / PROJECTION_DAYS), cost: money((cost * MONTH_DAYS) / PROJECTION_DAYS) },
      daily: [...days.values()].map((d) => ({ ...d, cost: money(d.cost.value) })),
      providers: providerCosts
        .map(([id, p]) => ({
          provider: id, name: own(config.current.providers, id)?.name ?? id, group: own(config.current.providers, id)?.group ?? null,
          tokens: p.tokens, cost: money(p.cost), ...avg(p.tokens, p.cost),
        }))
        .sort((a, b) => b.monthly_cost - a.monthly_cost || b.tokens - a.tokens || (a.provider < b.provider ? -1 : 1)),
    };
  });
};
