// Versioned schema migrations, applied in order at start. Every statement is idempotent (IF NOT EXISTS), so two
// replicas starting at once against one ClickHouse both succeed. Applied versions are kept in schema_migrations.

import type { Store } from './client.js';
import { layoutStatements, type Layout } from './layout.js';
import { ROLLUP_COLUMNS, ROLLUP_COUNTS, ROLLUP_DIMS, ROLLUP_SUMS, dailySelect, rollupSelect, unpricedSql } from './rollup-sql.js';

export { layoutStatements, onCluster, type Layout } from './layout.js';
export { ROLLUP_DIMENSIONS, ROLLUP_SUM_COLUMNS, dailySelect, rollupSelect, unpricedSql } from './rollup-sql.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: (db: string) => readonly string[];
  /**
   * A query answering one row with `done` = 1 when the migration's effect is already there (a statement of it is
   * not idempotent, and an earlier run stopped between it and the version's row): the statements are then skipped.
   */
  readonly done?: (db: string) => string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'requests',
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.requests (
        request_id UUID,
        ts DateTime64(3, 'UTC'),
        end_ts DateTime64(3, 'UTC'),
        endpoint LowCardinality(String),
        provider LowCardinality(String),
        provider_group LowCardinality(String),
        model String,
        requested_model String,
        api_key_name LowCardinality(String),
        stream Bool,
        status LowCardinality(String),
        http_status UInt16,
        error_type LowCardinality(String),
        input_tokens Nullable(UInt64),
        cached_tokens Nullable(UInt64),
        cache_write_tokens Nullable(UInt64),
        output_tokens Nullable(UInt64),
        reasoning_tokens Nullable(UInt64),
        total_tokens UInt64,
        usage_source LowCardinality(String),
        cost Decimal(18, 12),
        list_cost Decimal(18, 12),
        duration_ms Float64,
        ttft_ms Nullable(Float64),
        upstream_ms Nullable(Float64)
      ) ENGINE = ReplacingMergeTree
      PARTITION BY toYYYYMM(ts)
      ORDER BY (toDate(ts), request_id)`,
    ],
  },
  {
    // Routing (issue 4): combo attempts tied to their client request, the connection used, auto-switch, pings.
    version: 2,
    name: 'routing',
    statements: (db) => [
      `ALTER TABLE ${db}.requests
        ADD COLUMN IF NOT EXISTS kind LowCardinality(String) DEFAULT 'request' AFTER request_id,
        ADD COLUMN IF NOT EXISTS parent_id Nullable(UUID) AFTER kind,
        ADD COLUMN IF NOT EXISTS combo LowCardinality(String) DEFAULT '' AFTER parent_id,
        ADD COLUMN IF NOT EXISTS attempt UInt16 DEFAULT 0 AFTER combo,
        ADD COLUMN IF NOT EXISTS connection LowCardinality(String) DEFAULT '' AFTER provider_group,
        ADD COLUMN IF NOT EXISTS auto_switched Bool DEFAULT false AFTER connection`,
    ],
  },
  {
    // Rollups (issue 5): one row per hour and dimension set, kept current by a materialized view on every insert
    // into `requests`. The history already in `requests` is aggregated BEFORE the view exists, so no row is in both
    // (the cut-over counts nothing twice; migrations run before this process writes). Both tables keep an insert
    // deduplication window so a retried batch (same token) reaches neither twice.
    version: 3,
    name: 'rollups',
    // Its last statement creates the view: once the view exists, a rerun (the records lost) must not backfill again.
    done: (db) => viewExists(db, 'usage_hourly_mv'),
    statements: (db) => [
      `ALTER TABLE ${db}.requests MODIFY SETTING non_replicated_deduplication_window = 1000`,
      `CREATE TABLE IF NOT EXISTS ${db}.usage_hourly (
        hour DateTime('UTC'),
        ${ROLLUP_COLUMNS}
      ) ENGINE = AggregatingMergeTree
      PARTITION BY toYYYYMM(hour)
      ORDER BY (hour, kind, provider, model, combo, api_key_name, status, provider_group)
      SETTINGS non_replicated_deduplication_window = 1000`,
      // One token: a second replica migrating at the same moment inserts the same backfill, and ClickHouse drops it.
      // Its columns named: a rerun (schema_migrations lost, e.g. to a disk error) finds the columns later migrations
      // added to the rollup (unpriced_rows), which take their defaults.
      `INSERT INTO ${db}.usage_hourly (${ROLLUP_DIMS}, ${ROLLUP_SUMS})
       SETTINGS insert_deduplicate = 1, insert_deduplication_token = 'tollgate-migration-3-backfill'
       ${rollupSelect(`${db}.requests FINAL`)}`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.usage_hourly_mv TO ${db}.usage_hourly AS ${rollupSelect(`${db}.requests`)}`,
    ],
  },
  {
    // Alerts (issue 6): every alert fired, keyed by a deterministic id (kind, subject, threshold, window), so a
    // replica or a restart that fires the same alert again writes the same row; `read` is updated by inserting a
    // newer version. Every delivery attempt's outcome is kept next to it.
    version: 4,
    name: 'alerts',
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.alerts (
        id UUID,
        kind LowCardinality(String),
        severity LowCardinality(String),
        subject String,
        threshold Nullable(Float64),
        window String,
        title String,
        message String,
        data String,
        fired_at DateTime64(3, 'UTC'),
        read Bool DEFAULT false,
        version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY id`,
      `CREATE TABLE IF NOT EXISTS ${db}.alert_deliveries (
        alert_id UUID,
        channel LowCardinality(String),
        delivered Bool,
        attempts UInt16,
        error String,
        ts DateTime64(3, 'UTC')
      ) ENGINE = MergeTree
      PARTITION BY toYYYYMM(ts)
      ORDER BY (ts, alert_id)`,
    ],
  },
  {
    // Replicas (issue 13): an alert is claimed through ClickHouse so that it is delivered once. Each replica inserts
    // the alert's row with the alert id as insert deduplication token and its own instance id in `claimed_by`; the
    // insert that comes second is dropped by ClickHouse, and reading the row back tells each replica who owns it.
    version: 5,
    name: 'alert claims',
    statements: (db) => [
      `ALTER TABLE ${db}.alerts ADD COLUMN IF NOT EXISTS claimed_by String DEFAULT ''`,
      `ALTER TABLE ${db}.alerts MODIFY SETTING non_replicated_deduplication_window = 1000`,
    ],
  },
  {
    // Claims (issue 13): work that one replica of several must do once (a keep-alive ping per window) is claimed by
    // inserting a row with the claim's key as insert deduplication token; the second insert of a key is dropped, and
    // the row read back names the owner (src/store/claims.ts).
    version: 6,
    name: 'claims',
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.claims (
        key String,
        owner String,
        at DateTime64(3, 'UTC')
      ) ENGINE = MergeTree
      ORDER BY (key, at)
      TTL toDateTime(at) + INTERVAL 40 DAY
      SETTINGS non_replicated_deduplication_window = 10000`,
    ],
  },
  {
    // Durable parts (issue 13): the spool deletes a segment once ClickHouse acknowledged its insert, so the insert must
    // be on disk by then. ClickHouse writes a part through the page cache by default; a machine crash or a disk that
    // fails (and goes read-only) before the kernel writes it back would lose rows already gone from the spool. Every
    // table fsyncs each inserted part and its directory: with inserts batched (one a second at most per table), the
    // cost is a few fsyncs a second. Merged parts need nothing: ClickHouse keeps the old parts for
    // `old_parts_lifetime` after a merge for this very case.
    version: 7,
    name: 'durable parts',
    statements: (db) =>
      ['schema_migrations', 'requests', 'usage_hourly', 'alerts', 'alert_deliveries', 'claims'].map(
        (table) => `ALTER TABLE ${db}.${table} MODIFY SETTING fsync_after_insert = 1, fsync_part_directory = 1`,
      ),
  },
  {
    // Reads at scale (issue 17): `requests` was sorted by (toDate(ts), request_id), and ClickHouse orders UUIDs by
    // their second half first, so UUIDv7 ids are in no time order inside a day: any time range read the whole of
    // each day it touched. Sorted by (toStartOfHour(ts), request_id), a range reads its hours only. The sort key of
    // a table cannot change in place, so the table is rebuilt: a copy with the new key is filled from the old one and
    // the two are exchanged atomically (the rollup's view follows the name `requests`, so it keeps firing on the
    // table that takes the inserts), then the old copy is dropped. Deduplication is unchanged: a retried row has the
    // same ts, so the same hour. The exchange is the one statement that is not idempotent, so the migration is
    // skipped when the sort key is already the new one (a run that stopped after the exchange).
    // Other replicas writing while this runs (docs/scaling.md): rows they insert between the copy and the exchange
    // stay in the old table, which is why upgrading a fleet to this version stops the writers for the copy.
    version: 8,
    name: 'requests sorted by hour',
    done: (db) => `SELECT count() > 0 AS done FROM system.tables
      WHERE database = '${db}' AND name IN ('requests', 'requests_local') AND sorting_key LIKE 'toStartOfHour(ts)%'`,
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.requests_v8 AS ${db}.requests ENGINE = ReplacingMergeTree
      PARTITION BY toYYYYMM(ts)
      ORDER BY (toStartOfHour(ts), request_id)
      SETTINGS non_replicated_deduplication_window = 1000, fsync_after_insert = 1, fsync_part_directory = 1`,
      // (sharded: through the Distributed tables, each row to the shard it was on, and on it before the exchange)
      `INSERT INTO ${db}.requests_v8 SETTINGS distributed_foreground_insert = 1 SELECT * FROM ${db}.requests`,
      `EXCHANGE TABLES ${db}.requests AND ${db}.requests_v8`,
      `DROP TABLE IF EXISTS ${db}.requests_v8 SYNC`,
    ],
  },
  {
    // Price sources (issue 18): where each row's price came from, `config`, `catalog@<version>` or `none` (a paid
    // model with no price anywhere: its cost is unknown, not 0; docs/catalog.md). Rows written before say ''.
    // Numbered from 20: 8-19 are the store's own (sort key, rollups).
    version: 20,
    name: 'price source',
    statements: (db) => [
      `ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS price_source LowCardinality(String) DEFAULT '' AFTER list_cost`,
    ],
  },
  {
    // The request's trace id (issue 16: the console's request details link a row to its trace). '' when the request
    // had none (no tracing configured and no incoming traceparent), and on rows written before.
    version: 21,
    name: 'trace id',
    statements: (db) => [`ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS trace_id String DEFAULT '' AFTER upstream_ms`],
  },
  {
    // Reads at scale (issue 17): /api/usage counted the rows of unknown cost (paid, no price anywhere, tokens spent;
    // docs/catalog.md) from the raw rows of the whole period, a second read beside the rollup's. The rollup counts them
    // itself now: a column, filled by the view from here on, and for the rows already written (price sources exist
    // since migration 20) by correction rows that add only to the new column (every other sum 0, min_ts no older than
    // the group's), so the period's sums come from one read of the rollup. The view's query is changed in place
    // (MODIFY QUERY: the view never stops firing). The backfill carries a token, so a rerun adds nothing twice.
    version: 22,
    name: 'unpriced rows in the rollup',
    // Done once the view counts them (its last statement); a backfill that ran without it is dropped by its token.
    done: (db) => viewExists(db, 'usage_hourly_mv', 'unpriced_rows'),
    statements: (db) => [
      `ALTER TABLE ${db}.usage_hourly ADD COLUMN IF NOT EXISTS unpriced_rows SimpleAggregateFunction(sum, UInt64) DEFAULT 0`,
      `INSERT INTO ${db}.usage_hourly (${ROLLUP_DIMS}, ${ROLLUP_SUMS}, unpriced_rows)
       SETTINGS insert_deduplicate = 1, insert_deduplication_token = 'tollgate-migration-22-backfill'
       SELECT toStartOfHour(ts) AS hour, kind, provider, provider_group, model, combo, api_key_name, status, 0, 0, 0, 0, 0, 0, 0,
         toDecimal128(0, 12), toDecimal128(0, 12), 0, min(ts), count()
       FROM ${db}.requests FINAL WHERE ${unpricedSql()}
       GROUP BY ${ROLLUP_DIMS}`,
      `ALTER TABLE ${db}.usage_hourly_mv MODIFY QUERY ${rollupSelect(`${db}.requests`, ['unpriced_rows'])}`,
    ],
  },
  {
    // Reads at scale (issue 17): a month of the hourly rollup is ~500,000 rows on a busy gateway (an hour holds one row
    // per kind, provider, model, combo, key and status seen in it), and every month-long report summed them on each
    // read. The daily rollup holds one row per UTC day and dimension set: a report's whole days come from it, the
    // hours at its edges from the hourly rollup (store/aggregate.ts). Its view reads the blocks written to the hourly
    // rollup, so a day is always the sum of its hours (a retried batch is dropped from both alike); the days already
    // in the hourly rollup are backfilled before the view exists, under a token, as migration 3 does.
    version: 23,
    name: 'daily rollup',
    done: (db) => viewExists(db, 'usage_daily_mv'),
    statements: (db) => [
      `CREATE TABLE IF NOT EXISTS ${db}.usage_daily (
        day DateTime('UTC'),
        ${ROLLUP_COLUMNS},
        unpriced_rows SimpleAggregateFunction(sum, UInt64)
      ) ENGINE = AggregatingMergeTree
      PARTITION BY toYYYYMM(day)
      ORDER BY (day, kind, provider, model, combo, api_key_name, status, provider_group)
      SETTINGS non_replicated_deduplication_window = 1000`,
      `INSERT INTO ${db}.usage_daily SETTINGS insert_deduplicate = 1, insert_deduplication_token = 'tollgate-migration-23-backfill'
       ${dailySelect(`${db}.usage_hourly`, ['unpriced_rows'])}`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.usage_daily_mv TO ${db}.usage_daily AS ${dailySelect(`${db}.usage_hourly`, ['unpriced_rows'])}`,
    ],
  },
  {
    // Cache writes that last an hour (Anthropic's `ttl: '1h'`), which bill at a higher rate than the rest: of
    // cache_write_tokens, how many were (null: not reported, and on rows written before), so a row's cost can be
    // worked out from its tokens again (docs/catalog.md).
    version: 24,
    name: 'hour-long cache writes',
    statements: (db) => [
      `ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS cache_write_1h_tokens Nullable(UInt64) AFTER cache_write_tokens`,
    ],
  },
  {
    // Web searches a provider ran and bills per search (Anthropic's server-side web_search: $10 per 1,000), priced
    // into the row's cost; the count kept so the cost can be worked out again. Null: none reported, and rows before.
    version: 25,
    name: 'web searches',
    statements: (db) => [`ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS web_search_requests Nullable(UInt32) AFTER reasoning_tokens`],
  },
  {
    // The service tier a provider served the call at when not its standard one (OpenAI's flex, half price; priority):
    // it set the row's cost. '' for the standard tier, and on rows written before.
    version: 26,
    name: 'service tier',
    statements: (db) => [`ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS service_tier LowCardinality(String) DEFAULT '' AFTER price_source`],
  },
  {
    // The audio parts of input_tokens and output_tokens (OpenAI's audio models, Gemini's AUDIO modality), priced at
    // their own rates (price.input_audio, output_audio): a row's cost can be worked out from its tokens. 0: none.
    version: 27,
    name: 'audio tokens',
    statements: (db) => [
      `ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS audio_input_tokens UInt32 DEFAULT 0 AFTER input_tokens`,
      `ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS audio_output_tokens UInt32 DEFAULT 0 AFTER output_tokens`,
    ],
  },
  {
    // Whether the request went out upstream (docs/quota.md, "What counts"): a request the gateway refused before any
    // call, or whose connection was never made, is a row and no call, and counts toward no request quota. Rows written
    // before say true (they counted so), and so do the rollups' rows before: `dispatched_rows` defaults to `rows`, so
    // no backfill is needed. The views count it from here on (MODIFY QUERY: they never stop firing).
    version: 28,
    name: 'dispatched calls',
    statements: (db) => [
      `ALTER TABLE ${db}.requests ADD COLUMN IF NOT EXISTS dispatched Bool DEFAULT true AFTER trace_id`,
      ...['usage_hourly', 'usage_daily'].map((t) => `ALTER TABLE ${db}.${t} ADD COLUMN IF NOT EXISTS dispatched_rows SimpleAggregateFunction(sum, UInt64) DEFAULT rows`),
      `ALTER TABLE ${db}.usage_hourly_mv MODIFY QUERY ${rollupSelect(`${db}.requests`, ROLLUP_COUNTS)}`,
      `ALTER TABLE ${db}.usage_daily_mv MODIFY QUERY ${dailySelect(`${db}.usage_hourly`, ROLLUP_COUNTS)}`,
    ],
  },
];

/** A `done` probe: the view exists (and its query names `naming`, when given). */
const viewExists = (db: string, view: string, naming?: string): string => `SELECT count() > 0 AS done FROM system.tables
  WHERE database = '${db}' AND name = '${view}'${naming === undefined ? '' : ` AND position(create_table_query, '${naming}') > 0`}`;

/** Statements that set the store up before any migration runs (the database and the applied-versions table). */
function bootstrap(db: string): string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${db}`,
    `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations (version UInt32, name String, applied_at DateTime64(3, 'UTC'))
     ENGINE = ReplacingMergeTree ORDER BY version`,
  ];
}

/** Every statement `migrate` would run on an empty store (for review, and the cluster test). */
export function allStatements(db: string, layout: Layout = {}, migrations: readonly Migration[] = MIGRATIONS): string[] {
  return [...bootstrap(db), ...[...migrations].sort((a, b) => a.version - b.version).flatMap((m) => m.statements(db))].flatMap((sql) => layoutStatements(sql, layout));
}

export async function migrate(store: Store, migrations: readonly Migration[] = MIGRATIONS, layout: Layout = {}): Promise<number[]> {
  const db = store.database;
  const run = async (sql: string) => {
    for (const statement of layoutStatements(sql, layout)) await store.command(statement);
  };
  for (const sql of bootstrap(db)) await run(sql);
  const done = new Set(
    (await store.query<{ version: number | string }>(`SELECT version FROM ${db}.schema_migrations FINAL`)).map((r) => Number(r.version)),
  );
  const applied: number[] = [];
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    const already = m.done === undefined ? false : Number((await store.query<{ done: number | string }>(m.done(db)))[0]?.done) === 1;
    if (!already) for (const sql of m.statements(db)) await run(sql);
    await store.insert('schema_migrations', [{ version: m.version, name: m.name, applied_at: Date.now() }]);
    applied.push(m.version);
  }
  return applied;
}
