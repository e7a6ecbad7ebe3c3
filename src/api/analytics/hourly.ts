// GET /api/usage/hourly?tz=&date=: client requests, tokens and cost per local hour of one local day, with the peak
// and the low hour. A daylight-saving day has 23 or 25 entries (the repeated hour twice, told apart by its offset).

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../../config/watch.js';
import { aggregate, type Group } from '../../store/aggregate.js';
import type { Store } from '../../store/client.js';
import { CLIENT_KINDS, reportKinds, QueryReader, iso, money, usageKinds } from './params.js';
import { localDate, localDay, localHours, offsetLabel, type LocalHour } from '../../core/tz.js';
import { MoneySum } from '../../store/decimal.js';

interface Entry {
  hour: string;
  utc_offset: string;
  start: string;
  end: string;
  requests: number;
  tokens: number;
  cost: number;
}

/** The sums an hour's figures read. */
const SUMS = ['rows', 'tokens', 'cost'] as const;

const fold = (groups: readonly Group[], keepalive: boolean) => {
  const usage = new Set<string>(usageKinds(keepalive));
  const client = new Set<string>(CLIENT_KINDS);
  let requests = 0;
  let tokens = 0;
  const cost = new MoneySum();
  for (const g of groups) {
    if (client.has(g.kind!)) requests += g.rows;
    if (usage.has(g.kind!)) {
      tokens += g.tokens;
      cost.add(g.cost);
    }
  }
  return { requests, tokens, cost: money(cost.value) };
};

/**
 * Per local hour, in one grouped read by the instant each hour starts (from the rollups in a whole-hour zone; from
 * the raw rows in one such as +05:30, where a UTC hour straddles two local hours: aggregate() decides).
 */
async function perHour(store: Store, hours: readonly LocalHour[], tz: string, keepalive: boolean) {
  const groups = await aggregate(store, {
    from: hours[0]!.from, to: hours[hours.length - 1]!.to, by: ['hour_epoch', 'kind'], tz, filters: { kinds: reportKinds(keepalive) }, sums: SUMS,
  });
  const byStart = new Map<number, Group[]>();
  for (const g of groups) {
    const start = Number(g.hour_epoch) * 1000;
    const list = byStart.get(start);
    if (list === undefined) byStart.set(start, [g]);
    else list.push(g);
  }
  return hours.map((h) => fold(byStart.get(h.from) ?? [], keepalive));
}

export const hourlyRoutes: FastifyPluginAsync<{ store: Store; config: ConfigHolder; now: () => number }> = async (app, { store, config, now }) => {
  app.get('/api/usage/hourly', async (req) => {
    const q = new QueryReader(req.query, ['tz', 'date', 'include_keepalive']);
    const t = now();
    // budgets.timezone is checked when the config is loaded.
    const tz = q.timeZone('tz') ?? config.current.budgets.timezone ?? 'UTC';
    const day = q.date('date');
    const keepalive = q.bool('include_keepalive');
    const date = day === undefined ? localDate(tz, t) : iso(day).slice(0, 10);
    const { from, to } = localDay(tz, date);
    const hours = localHours(tz, from, to);
    const sums = await perHour(store, hours, tz, keepalive);
    const entries: Entry[] = hours.map((h, i) => ({
      hour: `${String(h.hour).padStart(2, '0')}:00`, utc_offset: offsetLabel(h.offsetMin), start: iso(h.from), end: iso(h.to), ...sums[i]!,
    }));
    // Peak: the most tokens (none when no hour used any). Low: the fewest tokens among the hours that have begun.
    // Ties go to the earlier hour.
    let peak: Entry | null = null;
    let low: Entry | null = null;
    for (const [i, e] of entries.entries()) {
      if (e.tokens > 0 && (peak === null || e.tokens > peak.tokens)) peak = e;
      if (hours[i]!.from <= t && (low === null || e.tokens < low.tokens)) low = e;
    }
    const totals = {
      requests: entries.reduce((s, e) => s + e.requests, 0),
      tokens: entries.reduce((s, e) => s + e.tokens, 0),
      cost: money(MoneySum.of(entries.map((e) => e.cost))),
    };
    return { tz, date, from: iso(from), to: iso(to), hours: entries.length, totals, peak, low, entries };
  });
};
