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

/** Requests, tokens and billed cost per model for rows whose start time is in [from, to). */
export async function usageByModel(store: Store, from: number, to: number): Promise<ModelUsage[]> {
  const rows = await store.query<ModelUsageRow>(
    `SELECT model, count() AS requests, sum(total_tokens) AS tokens, toString(sum(cost)) AS cost
     FROM ${store.t('requests')} FINAL
     WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
     GROUP BY model
     ORDER BY tokens DESC, model ASC`,
    { from, to },
  );
  return rows.map((r) => ({ model: r.model, requests: Number(r.requests), tokens: Number(r.tokens), cost: Number(r.cost) }));
}
