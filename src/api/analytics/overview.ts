// GET /api/usage/overview: today, this week and this month (UTC, the windows of /api/usage's `today`, `week` and
// `month`): client requests, tokens, cost, average response time, success rate, and the top model by tokens.

import type { FastifyPluginAsync } from 'fastify';
import { aggregateWindows, type Group } from '../../store/aggregate.js';
import type { Store } from '../../store/client.js';
import { periodWindow, readEnd, type Period } from '../../ledger/periods.js';
import { CLIENT_KINDS, reportKinds, QueryReader, iso, money, pct, usageKinds } from './params.js';
import { MoneySum } from '../../store/decimal.js';

export const OVERVIEW_PERIODS: readonly Period[] = ['today', 'week', 'month'];

function stats(w: { from: number; to: number }, groups: readonly Group[], keepalive: boolean) {
  const usage = new Set<string>(usageKinds(keepalive));
  const client = new Set<string>(CLIENT_KINDS);
  let requests = 0;
  let successes = 0;
  let successMs = 0;
  let tokens = 0;
  const costSum = new MoneySum();
  const models = new Map<string, { tokens: number; calls: number }>();
  for (const g of groups) {
    if (client.has(g.kind!)) {
      requests += g.rows;
      if (g.status === 'success') {
        successes += g.rows;
        successMs += g.durationMs;
      }
    }
    if (usage.has(g.kind!)) {
      tokens += g.tokens;
      costSum.add(g.cost);
      const m = models.get(g.model!) ?? { tokens: 0, calls: 0 };
      m.tokens += g.tokens;
      m.calls += g.rows;
      models.set(g.model!, m);
    }
  }
  // The top model: most tokens, then most upstream calls, then by name; none until a token was used.
  let top: { model: string; tokens: number; calls: number } | null = null;
  for (const [model, m] of models) {
    if (m.tokens === 0) continue;
    if (top === null || m.tokens > top.tokens || (m.tokens === top.tokens && (m.calls > top.calls || (m.calls === top.calls && model < top.model)))) {
      top = { model, ...m };
    }
  }
  return {
    from: iso(w.from),
    to: iso(w.to),
    requests,
    tokens,
    cost: money(costSum.value),
    avg_response_s: successes === 0 ? null : Number((successMs / successes / 1000).toFixed(3)),
    success_rate_pct: requests === 0 ? null : pct(successes, requests),
    top_model: top === null ? null : { model: top.model, tokens: top.tokens, share_pct: pct(top.tokens, tokens) },
  };
}

export const overviewRoutes: FastifyPluginAsync<{ store: Store; now: () => number; live?: boolean }> = async (app, { store, now, live = false }) => {
  app.get('/api/usage/overview', async (req) => {
    const q = new QueryReader(req.query, ['include_keepalive']);
    const keepalive = q.bool('include_keepalive');
    const t = now();
    const windows = OVERVIEW_PERIODS.map((p) => periodWindow(p, t));
    // The three periods in one read (they all end now; each starts at a UTC midnight).
    const groups = await aggregateWindows(store, {
      windows: windows.map((w) => ({ from: w.from, to: readEnd(w) })), by: ['kind', 'status', 'model'], filters: { kinds: reportKinds(keepalive) }, openEnd: live,
      sums: ['rows', 'tokens', 'cost', 'durationMs'],
    });
    const out: Record<string, ReturnType<typeof stats>> = {};
    OVERVIEW_PERIODS.forEach((p, i) => (out[p] = stats(windows[i]!, groups[i]!, keepalive)));
    return { date: iso(t).slice(0, 10), ...out };
  });
};
