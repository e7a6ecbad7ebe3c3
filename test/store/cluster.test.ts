// storage.cluster (docs/scaling.md): the same migrations for a ClickHouse cluster. Every DDL statement runs ON
// CLUSTER and every MergeTree engine becomes its Replicated twin, keyed by `{shard}` and the table, named by
// `{replica}`, with its own arguments kept; data statements are left alone. No cluster (and no Keeper) runs here, so
// the statements are checked for what they say and parsed by the real engine's parser (EXPLAIN AST), not executed.

import t from 'tap';
import { openStore } from '../../src/store/client.js';
import { MIGRATIONS, allStatements, onCluster } from '../../src/store/migrations.js';
import { tempDir } from '../helpers/tmp.js';

const plain = allStatements('tollgate');
const clustered = allStatements('tollgate', { cluster: 'prod' });
const sharded = allStatements('tollgate', { cluster: 'prod', sharded: true });

t.test('without a cluster the statements are the migrations as written', async (t) => {
  t.same(plain.slice(2), MIGRATIONS.flatMap((m) => m.statements('tollgate')));
  t.notMatch(plain.join('\n'), /ON CLUSTER|Replicated/);
});

t.test('with a cluster: ON CLUSTER on every DDL, Replicated engines, data statements unchanged', async (t) => {
  t.equal(clustered.length, plain.length);
  clustered.forEach((sql, i) => {
    const head = sql.trim().split('\n')[0]!;
    if (/^(CREATE|ALTER|EXCHANGE|DROP)/.test(sql.trim())) t.match(head, /^(CREATE (DATABASE|TABLE|MATERIALIZED VIEW) IF NOT EXISTS|ALTER TABLE|EXCHANGE TABLES tollgate\.\w+ AND|DROP TABLE IF EXISTS) tollgate(\.\w+)? ON CLUSTER prod\b/, head);
    else t.equal(sql, plain[i], `left alone: ${head.slice(0, 60)}`);
    t.notMatch(sql, /ENGINE = (Replacing|Aggregating|Summing)?MergeTree\b/, 'no engine left unreplicated');
    t.notMatch(sql, /non_replicated_deduplication_window/);
  });
  const ENGINE = /ENGINE = (Replicated\w*MergeTree)\('\/clickhouse\/tables\/\{shard\}\/(tollgate\.\w+)', '\{replica\}'(?:, ([^)]*))?\)/;
  const engines = clustered.map((sql) => ENGINE.exec(sql)).filter((m) => m !== null).map((m) => [m[1], m[2], m[3]].filter(Boolean).join(' '));
  t.same(engines.sort(), [
    'ReplicatedAggregatingMergeTree tollgate.usage_daily',
    'ReplicatedAggregatingMergeTree tollgate.usage_hourly',
    'ReplicatedMergeTree tollgate.alert_deliveries',
    'ReplicatedMergeTree tollgate.claims',
    'ReplicatedReplacingMergeTree tollgate.alerts version',
    'ReplicatedReplacingMergeTree tollgate.requests',
    'ReplicatedReplacingMergeTree tollgate.requests_v8',
    'ReplicatedReplacingMergeTree tollgate.schema_migrations',
  ], 'every table, with its Keeper path, replica macro and engine arguments');
  t.equal(onCluster("ALTER TABLE db.t MODIFY SETTING non_replicated_deduplication_window = 10", 'c'), 'ALTER TABLE db.t ON CLUSTER c MODIFY SETTING replicated_deduplication_window = 10');
});

t.test('sharded: <table>_local Replicated tables under Distributed ones with the gateway\'s table names', async (t) => {
  const TABLES = ['alert_deliveries', 'alerts', 'claims', 'requests', 'schema_migrations', 'usage_daily', 'usage_hourly'];
  const locals = sharded.map((sql) => /^\s*CREATE TABLE IF NOT EXISTS tollgate\.(\w+)_local ON CLUSTER prod \(/.exec(sql)?.[1]).filter(Boolean);
  t.same(locals.sort(), TABLES, 'every table has its local twin');
  sharded.filter((sql) => /_local ON CLUSTER prod \(/.test(sql)).forEach((sql) => {
    t.match(sql, /ENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/\{shard\}\/tollgate\.\w+_local', '\{replica\}'/, 'replicated, keyed by its local name');
  });
  const dist = sharded.map((sql) => /^CREATE TABLE IF NOT EXISTS tollgate\.(\w+) ON CLUSTER prod AS tollgate\.(\w+) ENGINE = Distributed\(prod, tollgate, (\w+), (.+)\)$/.exec(sql)).filter((m) => m !== null);
  t.same(dist.map((m) => [m[1], m[2], m[3], m[4]]).sort(), [
    ['alert_deliveries', 'alert_deliveries_local', 'alert_deliveries_local', 'cityHash64(alert_id)'],
    ['alerts', 'alerts_local', 'alerts_local', 'cityHash64(id)'],
    ['claims', 'claims_local', 'claims_local', 'cityHash64(key)'],
    ['requests', 'requests_local', 'requests_local', 'cityHash64(request_id)'],
    ['requests_v8', 'requests_v8_local', 'requests_v8_local', 'cityHash64(request_id)'],
    ['schema_migrations', 'schema_migrations_local', 'schema_migrations_local', 'version'],
    ['usage_daily', 'usage_daily_local', 'usage_daily_local', 'rand()'],
    ['usage_hourly', 'usage_hourly_local', 'usage_hourly_local', 'rand()'],
  ], 'a Distributed table per table, sharded by the key its deduplication relies on (a request, a claim, an alert: one shard)');
  const view = sharded.find((sql) => /MATERIALIZED VIEW/.test(sql))!;
  t.match(view, /TO tollgate\.usage_hourly_local AS/, 'the view writes its node\'s local rollup');
  t.match(view, /FROM tollgate\.requests_local\b/, 'from its node\'s local requests');
  const daily = sharded.find((sql) => /MATERIALIZED VIEW IF NOT EXISTS tollgate\.usage_daily_mv/.test(sql))!;
  t.match(daily, /TO tollgate\.usage_daily_local AS[\s\S]*FROM tollgate\.usage_hourly_local\b/, 'the daily view: from its node\'s hourly rollup to its daily one');
  const modified = sharded.filter((sql) => /MODIFY QUERY/.test(sql));
  t.equal(modified.length, 3, 'the hourly view\'s query changed twice (migrations 22 and 28), the daily one\'s once (28)');
  t.match(modified[0]!, /^ALTER TABLE tollgate\.usage_hourly_mv ON CLUSTER prod MODIFY QUERY[\s\S]*FROM tollgate\.requests_local AS src\b/, 'the view keeps its name and reads its node\'s local requests');
  t.match(modified[1]!, /^ALTER TABLE tollgate\.usage_hourly_mv ON CLUSTER prod MODIFY QUERY[\s\S]*dispatched_rows[\s\S]*FROM tollgate\.requests_local AS src\b/, 'migration 28: the hourly view counts dispatched rows, from its node\'s requests');
  t.match(modified[2]!, /^ALTER TABLE tollgate\.usage_daily_mv ON CLUSTER prod MODIFY QUERY[\s\S]*sum\(dispatched_rows\)[\s\S]*FROM tollgate\.usage_hourly_local\b/, 'and the daily view sums them from its node\'s hourly rollup');
  const counted = sharded.filter((sql) => /ADD COLUMN IF NOT EXISTS dispatched_rows/.test(sql)).map((sql) => /ALTER TABLE (\S+)/.exec(sql)![1]);
  t.same(counted, ['tollgate.usage_hourly_local', 'tollgate.usage_hourly', 'tollgate.usage_daily_local', 'tollgate.usage_daily'], 'dispatched_rows: on the local and the Distributed rollups');
  const added = sharded.filter((sql) => /ADD COLUMN IF NOT EXISTS kind/.test(sql)).map((sql) => /ALTER TABLE (\S+)/.exec(sql)![1]);
  t.same(added, ['tollgate.requests_local', 'tollgate.requests'], 'a column is added to the local and the Distributed table');
  const settings = sharded.filter((sql) => /MODIFY SETTING/.test(sql)).map((sql) => /ALTER TABLE (\S+)/.exec(sql)![1]);
  t.ok(settings.length > 0 && settings.every((name) => name!.endsWith('_local')), 'settings go to local tables only');
  t.notMatch(sharded.join('\n'), /non_replicated_deduplication_window/);
  t.ok(sharded.includes('EXCHANGE TABLES tollgate.requests_local AND tollgate.requests_v8_local ON CLUSTER prod'), 'the rebuild of requests exchanges the local tables; the Distributed ones keep their names');
  t.ok(sharded.includes('DROP TABLE IF EXISTS tollgate.requests_v8_local ON CLUSTER prod SYNC'), 'and drops the old local copy');
  const data = sharded.filter((sql) => /^\s*INSERT/.test(sql));
  t.ok(data.length > 0 && data.every((sql) => !/_local/.test(sql)), 'data statements go through the Distributed tables');
});

t.test('the clustered and sharded statements parse (ClickHouse\'s own parser, EXPLAIN AST)', async (t) => {
  const store = openStore({ clickhouse_url: '', database: 'tollgate', data_dir: tempDir(t, 'tollgate-cluster-'), username: 'default', password: '' });
  t.teardown(() => store.close());
  for (const sql of [...clustered, ...sharded]) {
    const rows = await store.query<{ explain: string }>(`EXPLAIN AST ${sql}`);
    t.ok(rows.length > 0, sql.trim().split('\n')[0]!.slice(0, 80));
  }
});
