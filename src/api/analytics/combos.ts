// GET /api/usage/combos?period=: per combo, its client requests (combo rows) and their outcome, the tokens and cost of
// its upstream attempts, and per model the attempts, failed attempts, tokens with their share and cost. Fallback
// members that failed and fusion panel members and judge calls all count as attempts of the model they went to.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../../config/watch.js';
import { aggregate } from '../../store/aggregate.js';
import type { Store } from '../../store/client.js';
import { periodWindow, readEnd } from '../../ledger/periods.js';
import { QueryReader, iso, money, pct } from './params.js';
import { readPeriod } from './usage.js';
import { own } from '../../core/own.js';
import { MoneySum } from '../../store/decimal.js';

interface ModelStats {
  model: string;
  attempts: number;
  failures: number;
  tokens: number;
  /** Summed exactly; its value once every attempt is in. */
  cost: MoneySum;
}

interface ComboStats {
  requests: number;
  failures: number;
  models: Map<string, ModelStats>;
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const comboRoutes: FastifyPluginAsync<{ store: Store; config: ConfigHolder; now: () => number; live?: boolean }> = async (
  app, { store, config, now, live = false },
) => {
  app.get('/api/usage/combos', async (req) => {
    const q = new QueryReader(req.query, ['period', 'combo']);
    const period = readPeriod(q);
    const only = q.string('combo');
    const w = periodWindow(period, now());
    const filters = only === undefined ? {} : { combo: only };
    // Client requests (kind combo) and their attempts in one read, told apart by kind.
    // On the real clock a window that ends now reads its current hour from the rollup (aggregate's openEnd).
    const groups = await aggregate(store, {
      from: w.from, to: readEnd(w), by: ['kind', 'combo', 'model', 'status'], filters: { ...filters, kinds: ['combo', 'attempt'] },
      openEnd: live && period !== 'yesterday', sums: ['rows', 'tokens', 'cost'],
    });
    const clients = groups.filter((g) => g.kind === 'combo');
    const attempts = groups.filter((g) => g.kind === 'attempt');
    const combos = new Map<string, ComboStats>();
    const combo = (name: string): ComboStats => {
      let c = combos.get(name);
      if (c === undefined) {
        c = { requests: 0, failures: 0, models: new Map() };
        combos.set(name, c);
      }
      return c;
    };
    // Every configured combo is listed, used or not; a combo removed from the config still shows its history.
    for (const name of Object.keys(config.current.combos)) if (only === undefined || only === name) combo(name);
    for (const g of clients) {
      const c = combo(g.combo!);
      c.requests += g.rows;
      if (g.status !== 'success') c.failures += g.rows;
    }
    for (const g of attempts) {
      const c = combo(g.combo!);
      const m = c.models.get(g.model!) ?? { model: g.model!, attempts: 0, failures: 0, tokens: 0, cost: new MoneySum() };
      m.attempts += g.rows;
      if (g.status !== 'success') m.failures += g.rows;
      m.tokens += g.tokens;
      m.cost.add(g.cost);
      c.models.set(g.model!, m);
    }
    const list = [...combos.entries()].map(([name, c]) => {
      const models = [...c.models.values()].map((m) => ({ ...m, cost: m.cost.value }));
      const tokens = models.reduce((s, m) => s + m.tokens, 0);
      const cost = MoneySum.of(models.map((m) => m.cost));
      return {
        combo: name,
        strategy: own(config.current.combos, name)?.strategy ?? null,
        requests: c.requests,
        successes: c.requests - c.failures,
        failures: c.failures,
        success_rate_pct: c.requests === 0 ? null : pct(c.requests - c.failures, c.requests),
        attempts: models.reduce((s, m) => s + m.attempts, 0),
        tokens,
        cost: money(cost),
        models: models
          .map((m) => ({ ...m, token_share_pct: pct(m.tokens, tokens), cost: money(m.cost), cost_share_pct: pct(m.cost, cost) }))
          .sort((a, b) => b.tokens - a.tokens || b.attempts - a.attempts || byName(a.model, b.model)),
      };
    });
    list.sort((a, b) => b.requests - a.requests || b.tokens - a.tokens || byName(a.combo, b.combo));
    return { period, date: w.date, from: iso(w.from), to: iso(w.to), combos: list };
  });
};
