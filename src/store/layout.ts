// How the schema's statements are laid out (DESIGN.md decision 1, docs/scaling.md): as they are on one server, `ON
// CLUSTER` with Replicated engines on a cluster of replicas, and as local tables under Distributed ones when sharded.
// Pure string work on the migrations' statements (src/store/migrations.ts runs them).

/**
 * A statement for a ClickHouse cluster (storage.cluster, docs/scaling.md): DDL runs `ON CLUSTER`, and each MergeTree
 * engine becomes its Replicated twin, keyed in Keeper by `{shard}` and the table and named by `{replica}` (the
 * server macros every cluster defines). Data statements (the rollup backfill) run on one node and replicate.
 * Without a cluster the statement is returned as it is.
 */
export function onCluster(sql: string, cluster: string): string {
  if (cluster === '') return sql;
  const on = `ON CLUSTER ${cluster}`;
  const table = /^\s*CREATE TABLE IF NOT EXISTS (\S+)/.exec(sql)?.[1];
  return sql
    .replace(/^(\s*CREATE (?:DATABASE|TABLE|MATERIALIZED VIEW) IF NOT EXISTS \S+)/, `$1 ${on}`)
    .replace(/^(\s*ALTER TABLE \S+)/, `$1 ${on}`)
    .replace(/^(\s*EXCHANGE TABLES \S+ AND \S+)/, `$1 ${on}`)
    .replace(/^(\s*DROP TABLE IF EXISTS \S+)/, `$1 ${on}`)
    .replace(/ENGINE = (Replacing|Aggregating|Summing)?MergeTree(?:\(([^)]*)\))?/, (_m, kind: string | undefined, args: string | undefined) =>
      `ENGINE = Replicated${kind ?? ''}MergeTree('/clickhouse/tables/{shard}/${table}', '{replica}'${args ? `, ${args}` : ''})`)
    .replace(/\bnon_replicated_deduplication_window\b/g, 'replicated_deduplication_window');
}

/** How the schema is laid out: one server, a cluster of replicas, or a sharded cluster (storage.cluster, storage.sharded). */
export interface Layout {
  readonly cluster?: string;
  readonly sharded?: boolean;
}

/** How each table's rows are spread over shards (sharded layout): by the key its deduplication relies on. */
const SHARD_KEYS: Readonly<Record<string, string>> = {
  schema_migrations: 'version',
  requests: 'cityHash64(request_id)',
  requests_v8: 'cityHash64(request_id)',
  usage_hourly: 'rand()',
  usage_daily: 'rand()',
  alerts: 'cityHash64(id)',
  alert_deliveries: 'cityHash64(alert_id)',
  claims: 'cityHash64(key)',
};

/**
 * The statements for one migration statement in a layout. One server or one shard: `onCluster`. Sharded (several
 * shards, docs/scaling.md): each table is `<table>_local` (Replicated, on every node) under a Distributed table with
 * the table's own name, sharded by its SHARD_KEYS entry, so every query and insert of the gateway is unchanged; the
 * rollup's view reads and writes the local tables of its node; a column added is added to both, a setting to the
 * local table only.
 */
export function layoutStatements(sql: string, layout: Layout = {}): string[] {
  const cluster = layout.cluster ?? '';
  if (cluster === '' || layout.sharded !== true) return [onCluster(sql, cluster)];
  const local = (name: string) => `${name}_local`;
  const table = /^\s*CREATE TABLE IF NOT EXISTS (\w+)\.(\w+)/.exec(sql);
  if (table !== null) {
    const [, db, name] = table as unknown as [string, string, string];
    const key = SHARD_KEYS[name] ?? 'rand()';
    return [
      onCluster(sql.replace(`${db}.${name}`, `${db}.${local(name)}`), cluster),
      `CREATE TABLE IF NOT EXISTS ${db}.${name} ON CLUSTER ${cluster} AS ${db}.${local(name)} ENGINE = Distributed(${cluster}, ${db}, ${local(name)}, ${key})`,
    ];
  }
  const view = /^\s*CREATE MATERIALIZED VIEW IF NOT EXISTS \S+ TO (\w+)\.(\w+)/.exec(sql);
  if (view !== null) {
    const [, db, target] = view as unknown as [string, string, string];
    const source = /\bFROM (\w+)\.(\w+)/.exec(sql)!;
    return [onCluster(sql.replace(`TO ${db}.${target}`, `TO ${db}.${local(target)}`).replace(source[0], `FROM ${source[1]}.${local(source[2]!)}`), cluster)];
  }
  const exchange = /^\s*EXCHANGE TABLES (\w+)\.(\w+) AND (\w+)\.(\w+)/.exec(sql);
  if (exchange !== null) {
    // The local tables trade places; each Distributed table keeps pointing at its local name.
    const [, db1, a, db2, b] = exchange as unknown as [string, string, string, string, string];
    return [onCluster(`EXCHANGE TABLES ${db1}.${local(a)} AND ${db2}.${local(b)}`, cluster)];
  }
  const drop = /^\s*DROP TABLE IF EXISTS (\w+)\.(\w+)(.*)$/s.exec(sql);
  if (drop !== null) {
    const [, db, name, rest] = drop as unknown as [string, string, string, string];
    return [onCluster(`DROP TABLE IF EXISTS ${db}.${name}${rest}`, cluster), onCluster(`DROP TABLE IF EXISTS ${db}.${local(name)}${rest}`, cluster)];
  }
  const modify = /^\s*ALTER TABLE \S+ MODIFY QUERY /.exec(sql);
  if (modify !== null) {
    // A view's query (the view itself is on every node, under its own name): it reads its node's local table.
    const source = /\bFROM (\w+)\.(\w+)/.exec(sql)!;
    return [onCluster(sql.replace(source[0], `FROM ${source[1]}.${local(source[2]!)}`), cluster)];
  }
  const alter = /^\s*ALTER TABLE (\w+)\.(\w+)/.exec(sql);
  if (alter !== null) {
    const [head, db, name] = alter as unknown as [string, string, string];
    const onLocal = onCluster(sql.replace(head, head.replace(`${db}.${name}`, `${db}.${local(name)}`)), cluster);
    return /\bMODIFY SETTING\b/.test(sql) ? [onLocal] : [onLocal, onCluster(sql, cluster)];
  }
  return [onCluster(sql, cluster)];
}
