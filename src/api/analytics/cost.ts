// GET /api/usage/cost?period=day|month&date=: the cost report of one UTC day or month: totals, the subscription /
// paid / free groups, month to date, a 30-day projection, each provider's share, and the average cost per 1M tokens.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../../config/watch.js';
import type { ProviderGroup } from '../../config/types.js';
import { TollgateError } from '../../core/errors.js';
import { aggregate, type Group } from '../../store/aggregate.js';
import type { Store } from '../../store/client.js';
import { CLIENT_KINDS, reportKinds, QueryReader, invalid, iso, money, parseMonth, pct, usageKinds } from './params.js';
import { own } from '../../core/own.js';
import { DAY_MS } from '../../core/windows.js';
import { MoneySum, moneyUnits } from '../../store/decimal.js';

export const GROUPS: readonly ProviderGroup[] = ['subscription', 'paid', 'free'];

export interface Spend {
  requests: number;
  tokens: number;
  cost: number;
  list_cost: number;
}

/** The sums a spend reads. */
const SPEND = ['rows', 'tokens', 'cost', 'listCost'] as const;

/** A spend being summed: its money exactly (MoneySum), made a Spend once every group is in. */
class SpendSum {
  requests = 0;
  tokens = 0;
  readonly cost = new MoneySum();
  readonly listCost = new MoneySum();

  get spend(): Spend {
    return { requests: this.requests, tokens: this.tokens, cost: this.cost.value, list_cost: this.listCost.value };
  }
}

/** A group into each of `sums` (those there are), its costs made units once for all of them. */
const add = (sums: readonly (SpendSum | undefined)[], g: Group): void => {
  const cost = moneyUnits(g.cost);
  const listCost = moneyUnits(g.listCost);
  for (const s of sums) {
    if (s === undefined) continue;
    s.requests += g.rows;
    s.tokens += g.tokens;
    s.cost.addUnits(cost);
    s.listCost.addUnits(listCost);
  }
};
const rounded = (s: Spend): Spend => ({ ...s, cost: money(s.cost), list_cost: money(s.list_cost) });
/** USD per 1M tokens; null when no token was used. */
export const perMillion = (cost: number, tokens: number): number | null => (tokens === 0 ? null : money((cost / tokens) * 1e6));

/** Client requests, and the upstream calls' spend, of a set of groups that carry a `kind`. */
export function split(groups: readonly Group[], keepalive: boolean): { requests: number; usage: Group[] } {
  const usage = new Set<string>(usageKinds(keepalive));
  const client = new Set<string>(CLIENT_KINDS);
  return { requests: groups.filter((g) => client.has(g.kind!)).reduce((s, g) => s + g.rows, 0), usage: groups.filter((g) => usage.has(g.kind!)) };
}

function nextMonth(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

function monthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

export const costRoutes: FastifyPluginAsync<{ store: Store; config: ConfigHolder; now: () => number }> = async (app, { store, config, now }) => {
  app.get('/api/usage/cost', async (req) => {
    const q = new QueryReader(req.query, ['period', 'date', 'include_keepalive']);
    const period = q.string('period') ?? 'day';
    if (period !== 'day' && period !== 'month') {
      throw new TollgateError('TOLLGATE_ERR_INVALID_PERIOD', `unknown period '${period.slice(0, 50)}'; accepted: day, month`, { param: 'period' });
    }
    const keepalive = q.bool('include_keepalive');
    const t = now();
    const today = Math.floor(t / DAY_MS) * DAY_MS;
    let from: number;
    let to: number;
    if (period === 'day') {
      from = q.date('date') ?? today;
      to = from + DAY_MS;
    } else {
      const raw = q.string('date');
      const m = raw === undefined ? monthStart(t) : parseMonth(raw);
      if (m === null) throw invalid('date', `'date' must be a month YYYY-MM (1970 or later) for period=month`);
      from = m;
      to = nextMonth(m);
    }
    const kinds = reportKinds(keepalive);
    const groups = await aggregate(store, { from, to, by: ['kind', 'provider_group', 'provider'], filters: { kinds }, sums: SPEND });
    const { requests, usage } = split(groups, keepalive);

    const allSum = new SpendSum();
    const groupSums = new Map<string, SpendSum>(GROUPS.map((g) => [g, new SpendSum()]));
    const providerSums = new Map<string, { group: string; sum: SpendSum }>();
    for (const g of usage) {
      let p = providerSums.get(g.provider!);
      if (p === undefined) {
        p = { group: g.provider_group!, sum: new SpendSum() };
        providerSums.set(g.provider!, p);
      }
      add([allSum, groupSums.get(g.provider_group!), p.sum], g);
    }
    const all = allSum.spend;
    const byGroup = new Map([...groupSums].map(([g, s]) => [g, s.spend]));
    const byProvider = new Map([...providerSums].map(([id, p]) => [id, { ...p.sum.spend, group: p.group }]));

    // Month to date: from the 1st of the report's month to the end of the report's window (the whole month for a
    // month report). The projection: a day report's spend x 30; a month report's average per elapsed day x 30.
    const mFrom = monthStart(from);
    let mtd = { requests, usage: all };
    if (period === 'day') {
      const m = split(await aggregate(store, { from: mFrom, to, by: ['kind'], filters: { kinds }, sums: SPEND }), keepalive);
      const spend = new SpendSum();
      for (const g of m.usage) add([spend], g);
      mtd = { requests: m.requests, usage: spend.spend };
    }
    const days = period === 'day' ? 1 : t >= to ? Math.round((to - from) / DAY_MS) : t < from ? 0 : Math.floor((today - from) / DAY_MS) + 1;
    const base = period === 'day' ? all : mtd.usage;
    const daily = { tokens: days === 0 ? 0 : Math.round(base.tokens / days), cost: days === 0 ? 0 : money(base.cost / days) };
    const projection = {
      basis: period === 'day' ? 'day_x30' : 'month_to_date_daily_average_x30',
      days,
      daily_average: daily,
      tokens_30d: days === 0 ? 0 : Math.round((base.tokens * 30) / days),
      cost_30d: days === 0 ? 0 : money((base.cost * 30) / days),
    };

    // Shares of cost; of tokens when nothing was billed (only subscription and free providers were used).
    const shareBasis = all.cost > 0 ? 'cost' : 'tokens';
    const providers = [...byProvider.entries()]
      .map(([id, { group, ...p }]) => ({
        provider: id,
        name: own(config.current.providers, id)?.name ?? id,
        // The configured group; the recorded one for a provider no longer configured.
        group: own(config.current.providers, id)?.group ?? (group === '' ? null : group),
        ...rounded(p),
        share_pct: shareBasis === 'cost' ? pct(p.cost, all.cost) : pct(p.tokens, all.tokens),
        avg_cost_per_1m_tokens: perMillion(p.cost, p.tokens),
      }))
      .sort((a, b) => b.cost - a.cost || b.tokens - a.tokens || (a.provider < b.provider ? -1 : 1));

    return {
      period,
      date: period === 'day' ? iso(from).slice(0, 10) : iso(from).slice(0, 7),
      from: iso(from),
      to: iso(to),
      currency: 'USD',
      totals: {
        requests, upstream_calls: all.requests, tokens: all.tokens, cost: money(all.cost), list_cost: money(all.list_cost),
        avg_cost_per_1m_tokens: perMillion(all.cost, all.tokens),
      },
      groups: Object.fromEntries(GROUPS.map((g) => [g, rounded(byGroup.get(g)!)])),
      month_to_date: {
        from: iso(mFrom), to: iso(to), requests: mtd.requests, upstream_calls: mtd.usage.requests, tokens: mtd.usage.tokens,
        cost: money(mtd.usage.cost), list_cost: money(mtd.usage.list_cost),
      },
      projection,
      share_basis: shareBasis,
      providers,
    };
  });
};
