// Versioned schema migrations, applied in order at start. Every statement is idempotent (IF NOT EXISTS), so two
// replicas starting at once against one ClickHouse both succeed. Applied versions are kept in schema_migrations.

import type { Store } from './client.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: (db: string) => readonly string[];
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
];

export async function migrate(store: Store, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const db = store.database;
  await store.command(`CREATE DATABASE IF NOT EXISTS ${db}`);
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations (version UInt32, name String, applied_at DateTime64(3, 'UTC'))
     ENGINE = ReplacingMergeTree ORDER BY version`,
  );
  const done = new Set(
    (await store.query<{ version: number | string }>(`SELECT version FROM ${db}.schema_migrations FINAL`)).map((r) => Number(r.version)),
  );
  const applied: number[] = [];
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    for (const sql of m.statements(db)) await store.command(sql);
    await store.insert('schema_migrations', [{ version: m.version, name: m.name, applied_at: Date.now() }]);
    applied.push(m.version);
  }
  return applied;
}
