// Rows whose cost is unknown: paid rows with no price anywhere (price_source 'none') that spent tokens
// (docs/catalog.md). Read from the raw rows, each request once; the hourly rollup does not carry price sources.

import type { Store } from './client.js';
import { filterSql, type Filters } from './aggregate.js';

/** Per `<provider>/<model>`: how many rows in [from, to) have an unknown cost. Models with none are left out. */
export async function unpricedByModel(store: Store, q: { from: number; to: number; filters?: Filters }): Promise<Map<string, number>> {
  const f = q.filters ?? {};
  const rows = await store.query<{ model: string; n: string | number }>(
    `SELECT model, count() AS n FROM (
       SELECT model FROM ${store.t('requests')}
       WHERE ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
         AND provider_group = 'paid' AND price_source = 'none' AND total_tokens > 0 AND ${filterSql(f)}
       LIMIT 1 BY request_id)
     GROUP BY model`,
    {
      from: q.from, to: q.to,
      f_provider: f.provider, f_model: f.model, f_combo: f.combo, f_key: f.apiKey, f_status: f.status, f_kinds: f.kinds,
    },
  );
  return new Map(rows.map((r) => [r.model, Number(r.n)]));
}
