// Parameterised read queries. Exact reads use FINAL so a retried insert is never counted twice.

import type { Store } from './client.js';

export interface ModelUsage {
  model: string;
  requests: number;
  tokens: number;
  cost: number;
}

interface ModelUsageRow {
  model: string;
  requests: string | number;
  tokens: string | number;
  cost: string | number;
}

/** The rows that carry one upstream call's usage for a client (a combo row sums its attempts; pings are apart). */
export const USAGE_ROWS = `kind IN ('request', 'attempt')`;
/** The rows that stand for one client request each. */
export const CLIENT_ROWS = `kind IN ('request', 'combo')`;

/**
 * Upstream calls, tokens and billed cost per model for rows whose start time is in [from, to): a combo request's
 * attempts count under the model each went to.
 */
export async function usageByModel(store: Store, from: number, to: number): Promise<ModelUsage[]> {
  const rows = await store.query<ModelUsageRow>(
    `SELECT model, count() AS requests, sum(total_tokens) AS tokens, toString(sum(cost)) AS cost
     FROM ${store.t('requests')} FINAL
     WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC') AND ${USAGE_ROWS}
     GROUP BY model
     ORDER BY tokens DESC, model ASC`,
    { from, to },
  );
  return rows.map((r) => ({ model: r.model, requests: Number(r.requests), tokens: Number(r.tokens), cost: Number(r.cost) }));
}

/** Client requests (a combo request once, however many attempts it made) with start time in [from, to). */
export async function clientRequests(store: Store, from: number, to: number): Promise<number> {
  const rows = await store.query<{ n: string | number }>(
    `SELECT count() AS n FROM ${store.t('requests')} FINAL
     WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC') AND ${CLIENT_ROWS}`,
    { from, to },
  );
  return Number(rows[0]?.n ?? 0);
}
