// The store side of export and import (docs/security.md). Every base table that holds data is written in
// ClickHouse's Native format (exact types, no conversion); tables that a materialized view fills (the hourly
// rollup) are left out, because importing `requests` fills them again through the view.
//
// Export copies each table (deduplicated: FINAL) into a snapshot table first, so the row count in the manifest is
// exactly what the file holds even while the gateway keeps writing. Import loads each file into a temporary table
// of the same structure, checks its row count against the manifest and its values (import-checks.ts), and only then
// inserts the rows whose key the table does not have yet: importing an archive twice, or into the store it came from,
// adds nothing.

import { randomBytes } from 'node:crypto';
import { ident, settingsClause, type Store } from './client.js';

export interface Column {
  readonly name: string;
  readonly type: string;
}

export interface TableInfo {
  readonly name: string;
  readonly engine: string;
  readonly columns: readonly Column[];
}

/** Temporary tables of an export or import in progress (or left by one that crashed): never data. */
const WORK_TABLE = /_(export|import)_[0-9a-f]{12}$/;

/**
 * The columns that identify a row, per table; a table not listed here is compared on every column. `alerts` keeps
 * one row per version of an alert (ReplacingMergeTree(version)), so a newer `read` state is a new row.
 */
export const ROW_KEYS: Readonly<Record<string, readonly string[]>> = {
  requests: ['request_id'],
  alerts: ['id', 'version'],
};

/** The highest migration applied to the store. */
export async function schemaVersion(store: Store): Promise<number> {
  const rows = await store.query<{ v: number | string }>(`SELECT max(version) AS v FROM ${store.t('schema_migrations')}`);
  return Number(rows[0]?.v ?? 0);
}

/**
 * The base tables that hold data: not views, not the tables a materialized view writes to, not schema_migrations
 * (the manifest carries the schema version instead), not claims (coordination between the replicas running now,
 * meaningless to a restored store), not the work tables of an export or import.
 */
const NOT_DATA = new Set(['schema_migrations', 'claims']);

/** A row of system.tables, as dataTables reads it. */
export interface TableRow {
  readonly name: string;
  readonly engine: string;
  readonly create_table_query: string;
}

/**
 * The data tables among `tables` (see NOT_DATA), each as the gateway names it: in a sharded layout (docs/scaling.md) a
 * table's rows are in `<table>_local` on each shard, under a Distributed table of the table's own name, so it is read
 * and written through that name (every shard's rows: the local table alone held one shard's) with the local table's
 * engine (FINAL or not); neither its `_local` name nor the Distributed one is a table of its own.
 */
export function pickDataTables(tables: readonly TableRow[]): { name: string; engine: string }[] {
  const distributed = new Set(tables.filter((t) => t.engine === 'Distributed').map((t) => t.name));
  const front = (name: string): string => (name.endsWith('_local') && distributed.has(name.slice(0, -'_local'.length)) ? name.slice(0, -'_local'.length) : name);
  const filled = new Set<string>();
  for (const t of tables) {
    if (t.engine !== 'MaterializedView') continue;
    const to = /^CREATE MATERIALIZED VIEW \S+ TO (?:`?[^\s.`]+`?\.)?`?([^\s`(]+)`?/.exec(t.create_table_query);
    if (to) filled.add(front(to[1]!));
  }
  return tables
    .filter((t) => /MergeTree$/.test(t.engine) && !t.name.startsWith('.inner') && !WORK_TABLE.test(t.name))
    .map((t) => ({ name: front(t.name), engine: t.engine }))
    .filter((t) => !filled.has(t.name) && !NOT_DATA.has(t.name));
}

export async function dataTables(store: Store): Promise<TableInfo[]> {
  const tables = await store.query<TableRow>(
    `SELECT name, engine, create_table_query FROM system.tables WHERE database = {db:String} ORDER BY name`,
    { db: store.database },
  );
  const base = pickDataTables(tables);
  const columns = await store.query<{ table: string; name: string; type: string }>(
    `SELECT table, name, type FROM system.columns WHERE database = {db:String} ORDER BY table, position`,
    { db: store.database },
  );
  return base.map((t) => ({ name: t.name, engine: t.engine, columns: columns.filter((c) => c.table === t.name).map(({ name, type }) => ({ name, type })) }));
}

const workName = (table: string, kind: 'export' | 'import'): string => `${table}_${kind}_${randomBytes(6).toString('hex')}`;

// The copies and the final insert are never deduplicated by block (identical blocks of two tables, or of two imports,
// would look like retries of each other).
const NO_BLOCK_DEDUP = { insert_deduplicate: 0, insert_deduplication_token: '', deduplicate_blocks_in_dependent_materialized_views: 0 } as const;

/** Write `table` (FINAL) to `file` in Native format; returns the number of rows written. */
export async function exportTable(store: Store, table: TableInfo, file: string): Promise<number> {
  const snap = store.t(workName(table.name, 'export'));
  const final = table.engine.includes('ReplacingMergeTree') ? ' FINAL' : '';
  await store.command(`CREATE TABLE ${snap} AS ${store.t(table.name)} ENGINE = MergeTree ORDER BY tuple()`);
  try {
    await store.command(`INSERT INTO ${snap} ${settingsClause(NO_BLOCK_DEDUP)} SELECT * FROM ${store.t(table.name)}${final}`);
    await store.exportNative(`SELECT * FROM ${snap}`, file);
    const rows = await store.query<{ n: number | string }>(`SELECT count() AS n FROM ${snap}`);
    return Number(rows[0]?.n ?? 0);
  } finally {
    await store.command(`DROP TABLE IF EXISTS ${snap}`);
  }
}

/** A table file loaded into its temporary table, waiting for `commit`. */
export interface StagedTable {
  readonly table: string;
  readonly rows: number;
  /** How many staged rows meet each of `conditions` (SQL, on the table's columns), in one read. */
  count(conditions: readonly string[]): Promise<number[]>;
  /** Insert the rows whose key `table` does not hold yet; returns how many that was. Drops the temporary table. */
  commit(): Promise<number>;
  /** Drop the temporary table (nothing was inserted). */
  discard(): Promise<void>;
}

/**
 * Load `file` (Native, columns `columns`) into a temporary copy of `table`. Columns the archive lacks take their
 * defaults; a column the table lacks is an error (the archive comes from a newer schema).
 */
export async function stageTable(store: Store, table: TableInfo, columns: readonly Column[], file: string): Promise<StagedTable> {
  const known = new Set(table.columns.map((c) => c.name));
  const unknown = columns.filter((c) => !known.has(c.name)).map((c) => c.name);
  if (unknown.length > 0) throw new Error(`table ${table.name} has no column ${unknown.join(', ')}`);
  const target = store.t(table.name);
  const tmp = store.t(workName(table.name, 'import'));
  await store.command(`CREATE TABLE ${tmp} AS ${target} ENGINE = MergeTree ORDER BY tuple()`);
  const discard = () => store.command(`DROP TABLE IF EXISTS ${tmp}`);
  try {
    await store.importNative(tmp, columns.map((c) => c.name), file, NO_BLOCK_DEDUP);
    const counted = await store.query<{ n: number | string }>(`SELECT count() AS n FROM ${tmp}`);
    const rows = Number(counted[0]?.n ?? 0);
    const key = (ROW_KEYS[table.name] ?? table.columns.map((c) => c.name)).map(ident);
    const tuple = key.length === 1 ? key[0]! : `(${key.join(', ')})`;
    // One row per key from the archive (LIMIT 1 BY) for keyed tables; a table compared on every column keeps
    // identical rows as the archive has them. transform_null_in: a NULL in the key matches a NULL.
    const fresh = `SELECT * FROM ${tmp} WHERE ${tuple} NOT IN (SELECT ${key.join(', ')} FROM ${target})${ROW_KEYS[table.name] ? ` LIMIT 1 BY ${key.join(', ')}` : ''}`;
    const nullIn = ' SETTINGS transform_null_in = 1';
    return {
      table: table.name,
      rows,
      count: async (conditions) => {
        const counts = conditions.map((c, i) => `countIf(${c}) AS c${i}`).join(', ');
        const [row] = await store.query<Record<string, number | string>>(`SELECT ${counts} FROM ${tmp}`);
        return conditions.map((_, i) => Number(row?.[`c${i}`] ?? 0));
      },
      commit: async () => {
        try {
          const n = await store.query<{ n: number | string }>(`SELECT count() AS n FROM (${fresh})${nullIn}`);
          await store.command(`INSERT INTO ${target} ${settingsClause(NO_BLOCK_DEDUP)} ${fresh}${nullIn}`);
          return Number(n[0]?.n ?? 0);
        } finally {
          await discard();
        }
      },
      discard,
    };
  } catch (err) {
    await discard();
    throw err;
  }
}
