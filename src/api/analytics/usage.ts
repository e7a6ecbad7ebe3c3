// GET /api/usage?period=: the spec's usage response (summary and byModel), read through aggregate() like every other
// report, with optional provider / model / combo / api_key filters.

import type { FastifyPluginAsync } from 'fastify';
import { TollgateError } from '../../core/errors.js';
import { aggregate } from '../../store/aggregate.js';
import type { Store } from '../../store/client.js';
import { PERIODS, isPeriod, periodWindow, readEnd, type Period } from '../../ledger/periods.js';
import { CLIENT_KINDS, reportKinds, FILTER_PARAMS, QueryReader, filtersEcho, iso, money, usageKinds } from './params.js';
import { MoneySum } from '../../store/decimal.js';

/** `period` (default `today`); an unknown one is a 400 TOLLGATE_ERR_INVALID_PERIOD that lists the accepted ones. */
export function readPeriod(q: QueryReader): Period {
  const period = q.string('period') ?? 'today';
  if (!isPeriod(period)) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_PERIOD', `unknown period '${period.slice(0, 50)}'; accepted: ${PERIODS.join(', ')}`, { param: 'period' });
  }
  return period;
}

/** Present only when some cost is unknown, so a fully priced answer keeps the spec's shape. */
const unknownCost = (n: number): { cost_known?: false; unpriced_requests?: number } => (n > 0 ? { cost_known: false, unpriced_requests: n } : {});

export const usageRoutes: FastifyPluginAsync<{ store: Store; now?: () => number }> = async (app, opts) => {
  const { store } = opts;
  const now = opts.now ?? Date.now;
  // On the real clock a window that ends now reads its current hour from the rollup (see aggregate's openEnd).
  const live = opts.now === undefined;
  app.get('/api/usage', async (req) => {
    const q = new QueryReader(req.query, ['period', ...FILTER_PARAMS, 'include_keepalive']);
    const period = readPeriod(q);
    const filters = q.filters();
    const keepalive = q.bool('include_keepalive');
    const w = periodWindow(period, now());
    // One pass over the window: client rows give summary.requests, upstream-call rows give tokens, cost and byModel
    // (a combo request's attempts count under the model each went to; byModel[].requests counts upstream calls).
    const groups = await aggregate(store, {
      from: w.from, to: readEnd(w), by: ['kind', 'model'], filters: { ...filters, kinds: reportKinds(keepalive) }, openEnd: live && period !== 'yesterday',
      sums: ['rows', 'tokens', 'cost', 'unpriced'],
    });
    const usage = new Set<string>(usageKinds(keepalive));
    const client = new Set<string>(CLIENT_KINDS);
    // Rows of paid models with no price anywhere (counted in the same read): their cost is unknown, so the model's
    // (and the summary's) cost is a lower bound, said with `cost_known: false` and `unpriced_requests` (docs/catalog.md).
    const models = new Map<string, { model: string; requests: number; tokens: number; cost: MoneySum; unpriced: number }>();
    let requests = 0;
    for (const g of groups) {
      if (client.has(g.kind!)) requests += g.rows;
      if (!usage.has(g.kind!)) continue;
      const m = models.get(g.model!) ?? { model: g.model!, requests: 0, tokens: 0, cost: new MoneySum(), unpriced: 0 };
      m.requests += g.rows;
      m.tokens += g.tokens;
      m.cost.add(g.cost);
      m.unpriced += g.unpriced;
      models.set(g.model!, m);
    }
    const byModel = [...models.values()]
      .map(({ unpriced, ...m }) => ({ ...m, cost: money(m.cost.value), ...unknownCost(unpriced) }))
      .sort((a, b) => b.tokens - a.tokens || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
    const summary = {
      requests,
      tokens: byModel.reduce((s, m) => s + m.tokens, 0),
      cost: money(MoneySum.of(byModel.map((m) => m.cost))),
      ...unknownCost([...models.values()].reduce((s, m) => s + m.unpriced, 0)),
    };
    return { period, date: w.date, from: iso(w.from), to: iso(w.to), filters: filtersEcho(filters), summary, byModel };
  });
};
