// GET /api/usage?period=: the spec's usage response, computed in ClickHouse.

import type { FastifyPluginAsync } from 'fastify';
import { TollgateError } from '../errors.js';
import type { Store } from '../store/client.js';
import { clientRequests, usageByModel } from '../store/queries.js';
import { PERIODS, isPeriod, periodWindow } from '../usage/periods.js';

const round = (usd: number): number => Number(usd.toFixed(12));

export const usageRoutes: FastifyPluginAsync<{ store: Store; now?: () => number }> = async (app, { store, now = Date.now }) => {
  app.get('/api/usage', async (req) => {
    const q = req.query as { period?: unknown };
    const period = typeof q.period === 'string' && q.period !== '' ? q.period : 'today';
    if (!isPeriod(period)) {
      throw new TollgateError('TOLLGATE_ERR_INVALID_PERIOD', `unknown period '${period.slice(0, 50)}'; accepted: ${PERIODS.join(', ')}`, { param: 'period' });
    }
    const w = periodWindow(period, now());
    const byModel = (await usageByModel(store, w.from, w.to + 1)).map((m) => ({ ...m, cost: round(m.cost) }));
    // summary.requests counts client requests; byModel[].requests counts the upstream calls each model served.
    const summary = byModel.reduce(
      (s, m) => ({ requests: s.requests, tokens: s.tokens + m.tokens, cost: round(s.cost + m.cost) }),
      { requests: await clientRequests(store, w.from, w.to + 1), tokens: 0, cost: 0 },
    );
    return { period, date: w.date, from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString(), summary, byModel };
  });
};
