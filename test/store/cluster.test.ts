// storage.cluster (docs/scaling.md): the same migrations for a ClickHouse cluster. Every DDL statement runs ON
// CLUSTER and every MergeTree engine becomes its Replicated twin, keyed by `{shard}` and the table, named by
// `{replica}`, with its own arguments kept; data statements are left alone. No cluster (and no Keeper) runs here, so
// the statements are checked for what they say and parsed by the real engine's parser (EXPLAIN AST), not executed.

import t from 'tap';
import { openStore } from '../../src/store/client.js';
import { MIGRATIONS, allStatements, onCluster } from '../../src/store/migrations.js';
import { tempDir } from '../helpers/tmp.js';

const plain = allStatements('tollgate');
const clustered = allStatements('tollgate', 'prod');

t.test('without a cluster the statements are the migrations as written', async (t) => {
  t.same(plain.slice(2), MIGRATIONS.flatMap((m) => m.statements('tollgate')));
  t.notMatch(plain.join('\n'), /ON CLUSTER|Replicated/);
});

t.test('with a cluster: ON CLUSTER on every DDL, Replicated engines, data statements unchanged', async (t) => {
  t.equal(clustered.length, plain.length);
  clustered.forEach((sql, i) => {
    const head = sql.trim().split('\n')[0]!;
    if (/^(CREATE|ALTER)/.test(sql.trim())) t.match(head, /^(CREATE (DATABASE|TABLE|MATERIALIZED VIEW) IF NOT EXISTS|ALTER TABLE) tollgate(\.\w+)? ON CLUSTER prod\b/, head);
    else t.equal(sql, plain[i], `left alone: ${head.slice(0, 60)}`);
    t.notMatch(sql, /ENGINE = (Replacing|Aggregating|Summing)?MergeTree\b/, 'no engine left unreplicated');
    t.notMatch(sql, /non_replicated_deduplication_window/);
  });
  const ENGINE = /ENGINE = (Replicated\w*MergeTree)\('\/clickhouse\/tables\/\{shard\}\/(tollgate\.\w+)', '\{replica\}'(?:, ([^)]*))?\)/;
  const engines = clustered.map((sql) => ENGINE.exec(sql)).filter((m) => m !== null).map((m) => [m[1], m[2], m[3]].filter(Boolean).join(' '));
  t.same(engines.sort(), [
    'ReplicatedAggregatingMergeTree tollgate.usage_hourly',
    'ReplicatedMergeTree tollgate.alert_deliveries',
    'ReplicatedMergeTree tollgate.claims',
    'ReplicatedReplacingMergeTree tollgate.alerts version',
    'ReplicatedReplacingMergeTree tollgate.requests',
    'ReplicatedReplacingMergeTree tollgate.schema_migrations',
  ], 'every table, with its Keeper path, replica macro and engine arguments');
  t.equal(onCluster("ALTER TABLE db.t MODIFY SETTING non_replicated_deduplication_window = 10", 'c'), 'ALTER TABLE db.t ON CLUSTER c MODIFY SETTING replicated_deduplication_window = 10');
});

t.test('the clustered statements parse (ClickHouse\'s own parser, EXPLAIN AST)', async (t) => {
  const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: tempDir(t, 'tollgate-cluster-'), username: 'default', password: '' });
  t.teardown(() => store.close());
  for (const sql of clustered) {
    const rows = await store.query<{ explain: string }>(`EXPLAIN AST ${sql}`);
    t.ok(rows.length > 0, sql.trim().split('\n')[0]!.slice(0, 80));
  }
});
