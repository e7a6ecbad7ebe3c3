// The rollups' SQL (usage_hourly, usage_daily): their columns, and the queries that fill them from the raw rows and
// from the hourly rollup. The migrations (src/store/migrations.ts) create the tables and views with these, each as it
// stood at its version; the rollups' repair (src/store/rollup-repair.ts) sums what they sum now.

/** The columns of a rollup after its time column: the dimensions, then the sums (usage_hourly, usage_daily). */
export const ROLLUP_COLUMNS = `kind LowCardinality(String),
        provider LowCardinality(String),
        provider_group LowCardinality(String),
        model String,
        combo LowCardinality(String),
        api_key_name LowCardinality(String),
        status LowCardinality(String),
        rows SimpleAggregateFunction(sum, UInt64),
        input_tokens SimpleAggregateFunction(sum, UInt64),
        cached_tokens SimpleAggregateFunction(sum, UInt64),
        cache_write_tokens SimpleAggregateFunction(sum, UInt64),
        output_tokens SimpleAggregateFunction(sum, UInt64),
        reasoning_tokens SimpleAggregateFunction(sum, UInt64),
        total_tokens SimpleAggregateFunction(sum, UInt64),
        cost SimpleAggregateFunction(sum, Decimal(38, 12)),
        list_cost SimpleAggregateFunction(sum, Decimal(38, 12)),
        duration_ms SimpleAggregateFunction(sum, Float64),
        min_ts SimpleAggregateFunction(min, DateTime64(3, 'UTC'))`;

/**
 * A row of unknown cost (docs/catalog.md): a paid model with no price anywhere that spent tokens. `of`: the table's
 * alias, where a select's aliases (`sum(total_tokens) AS total_tokens`) would shadow its columns.
 */
export const unpricedSql = (of = ''): string =>
  `${of}provider_group = 'paid' AND ${of}price_source = 'none' AND ${of}total_tokens > 0`;
/** The rollups' dimensions after their time column, and their summed columns (besides ROLLUP_COUNTS, `min_ts`). */
export const ROLLUP_DIMENSIONS = ['kind', 'provider', 'provider_group', 'model', 'combo', 'api_key_name', 'status'] as const;
export const ROLLUP_SUM_COLUMNS = [
  'rows', 'input_tokens', 'cached_tokens', 'cache_write_tokens', 'output_tokens', 'reasoning_tokens', 'total_tokens', 'cost', 'list_cost', 'duration_ms',
] as const;
export const ROLLUP_DIMS = `hour, ${ROLLUP_DIMENSIONS.join(', ')}`;
export const ROLLUP_SUMS = `${ROLLUP_SUM_COLUMNS.join(', ')}, min_ts`;

/**
 * The rollups' counts of some of their rows, added by later migrations: `unpriced_rows` (migration 22: rows of
 * unknown cost), `dispatched_rows` (migration 28: calls whose request went out upstream, docs/quota.md).
 */
export const ROLLUP_COUNTS = ['unpriced_rows', 'dispatched_rows'] as const;
export type RollupCount = (typeof ROLLUP_COUNTS)[number];

/** Each count's condition on a raw row of `src` (the view's source, aliased so). */
const COUNTED: Record<RollupCount, string> = {
  unpriced_rows: unpricedSql('src.'),
  dispatched_rows: 'src.dispatched',
};

/**
 * The rows of `usage_hourly` for the rows of `source` (the view's query, and the backfill's), with `counts` (those
 * the rollup had at the migration that writes the query: none at migration 3, unpriced_rows at 22, all from 28 on).
 */
export function rollupSelect(source: string, counts: readonly RollupCount[] = []): string {
  const extra = counts.map((c) => `, toUInt64(countIf(${COUNTED[c]})) AS ${c}`).join('');
  return `SELECT toStartOfHour(ts) AS hour, kind, provider, provider_group, model, combo, api_key_name, status,
      count() AS rows,
      sum(ifNull(input_tokens, 0)) AS input_tokens, sum(ifNull(cached_tokens, 0)) AS cached_tokens,
      sum(ifNull(cache_write_tokens, 0)) AS cache_write_tokens, sum(ifNull(output_tokens, 0)) AS output_tokens,
      sum(ifNull(reasoning_tokens, 0)) AS reasoning_tokens, sum(total_tokens) AS total_tokens,
      toDecimal128(sum(cost), 12) AS cost, toDecimal128(sum(list_cost), 12) AS list_cost,
      sum(duration_ms) AS duration_ms, min(ts) AS min_ts${extra}
    FROM ${source}${counts.length > 0 ? ' AS src' : ''}
    GROUP BY ${ROLLUP_DIMS}`;
}

/**
 * The rows of `usage_daily` for the rows of the hourly rollup `source` (the view's query, and the backfill's), with
 * `counts` (unpriced_rows from migration 23, which made the table; all from 28 on).
 */
export function dailySelect(source: string, counts: readonly RollupCount[]): string {
  return `SELECT toStartOfDay(hour) AS day, kind, provider, provider_group, model, combo, api_key_name, status,
      sum(rows) AS rows, sum(input_tokens) AS input_tokens, sum(cached_tokens) AS cached_tokens,
      sum(cache_write_tokens) AS cache_write_tokens, sum(output_tokens) AS output_tokens, sum(reasoning_tokens) AS reasoning_tokens,
      sum(total_tokens) AS total_tokens, sum(cost) AS cost, sum(list_cost) AS list_cost, sum(duration_ms) AS duration_ms,
      min(min_ts) AS min_ts${counts.map((c) => `, sum(${c}) AS ${c}`).join('')}
    FROM ${source}
    GROUP BY day, kind, provider, provider_group, model, combo, api_key_name, status`;
}
