// Which tables an export writes (src/store/export.ts pickDataTables), from system.tables rows as each layout has
// them. In a sharded layout (docs/scaling.md) each table is `<table>_local` on every shard under a Distributed table
// of its own name: the export read the connected node's `_local` tables (one shard's rows, under names an unsharded
// store does not have) and `claims_local` and `schema_migrations_local` (review s12d). It now reads every shard
// through the table's own name, with the local table's engine. The embedded store's own layout is in admin.test.ts.

import t from 'tap';
import { pickDataTables, type TableRow } from '../../src/store/export.js';

const table = (name: string, engine: string): TableRow => ({ name, engine, create_table_query: `CREATE TABLE tollgate.${name} ...` });
const view = (name: string, to: string): TableRow => ({ name, engine: 'MaterializedView', create_table_query: `CREATE MATERIALIZED VIEW tollgate.${name} TO tollgate.${to} (...) AS SELECT ...` });

t.test('one server: the base tables, not the rollups, views, claims or migrations', async (t) => {
  const rows = [
    table('alert_deliveries', 'ReplacingMergeTree'), table('alerts', 'ReplacingMergeTree'), table('claims', 'ReplacingMergeTree'),
    table('requests', 'ReplacingMergeTree'), table('schema_migrations', 'MergeTree'), table('usage_hourly', 'SummingMergeTree'),
    view('usage_hourly_mv', 'usage_hourly'), table('requests_export_0123456789ab', 'MergeTree'),
  ];
  t.same(pickDataTables(rows).map((x) => x.name), ['alert_deliveries', 'alerts', 'requests']);
});

t.test('sharded: every shard through the Distributed table of the same name, with the local engine', async (t) => {
  const sharded = (name: string, engine: string): TableRow[] => [table(name, 'Distributed'), table(`${name}_local`, `Replicated${engine}`)];
  const rows = [
    ...sharded('alert_deliveries', 'ReplacingMergeTree'), ...sharded('alerts', 'ReplacingMergeTree'), ...sharded('claims', 'ReplacingMergeTree'),
    ...sharded('requests', 'ReplacingMergeTree'), ...sharded('schema_migrations', 'MergeTree'), ...sharded('usage_hourly', 'SummingMergeTree'),
    view('usage_hourly_mv', 'usage_hourly_local'),
  ];
  t.same(pickDataTables(rows), [
    { name: 'alert_deliveries', engine: 'ReplicatedReplacingMergeTree' },
    { name: 'alerts', engine: 'ReplicatedReplacingMergeTree' },
    { name: 'requests', engine: 'ReplicatedReplacingMergeTree' },
  ]);
});
