// One ClickHouse client, two back ends (DESIGN.md decision 1): a server when storage.clickhouse_url is set,
// otherwise the embedded engine from chdb under storage.data_dir. Same SQL for both. The embedded engine runs one
// query at a time per connection, so operations are serialised here; a server takes them concurrently.

import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type * as Chdb from 'chdb/connection';
import type { Config } from '../config/types.js';

/**
 * The embedded engine is loaded only when it is used: an install for a ClickHouse server (the Docker image,
 * `npm ci --omit=optional`) does not carry chdb at all.
 */
function loadChdb(): typeof Chdb {
  try {
    return createRequire(import.meta.url)('chdb/connection') as typeof Chdb;
  } catch (err) {
    throw new Error('storage.clickhouse_url is empty, so the embedded ClickHouse engine (the chdb package) is needed, but it is not installed; install it (npm install) or set storage.clickhouse_url', { cause: err });
  }
}

type ClientConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>;

export type QueryParams = Record<string, unknown>;

export class Store {
  readonly database: string;
  readonly embedded: boolean;
  readonly #client: ClickHouseClient;
  readonly #pingTimeoutMs: number;
  readonly #foregroundDistributed: boolean;
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;

  /**
   * `pingTimeoutMs`: how long `ping` waits for a server (the embedded engine answers or throws). `sharded`: tables are
   * Distributed, and an insert is acknowledged only once every shard has its rows (`distributed_foreground_insert`).
   */
  constructor(client: ClickHouseClient, database: string, embedded: boolean, opts: { pingTimeoutMs?: number; sharded?: boolean } = {}) {
    this.#client = client;
    this.database = database;
    this.embedded = embedded;
    this.#pingTimeoutMs = opts.pingTimeoutMs ?? 2000;
    this.#foregroundDistributed = opts.sharded === true;
  }

  /** Qualified table name. */
  t(table: string): string {
    return `${this.database}.${table}`;
  }

  #run<T>(op: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('store is closed'));
    if (!this.embedded) return op();
    const next = this.#tail.then(op, op);
    this.#tail = next.catch(() => undefined);
    return next;
  }

  /**
   * Run a statement. `settings` apply to it (on the embedded engine they stay set for the session afterwards, so a
   * caller that changes one that others rely on sets it back, as `insert` always sets its own).
   */
  command(query: string, settings?: ClickHouseSettings): Promise<void> {
    return this.#run(async () => {
      await this.#client.command({ query, ...(settings === undefined ? {} : { clickhouse_settings: settings }) });
    });
  }

  /**
   * Write the result of `select` (no FORMAT clause) to the local file `file` in ClickHouse's Native format, without
   * holding it in memory: the embedded engine writes the file itself (INTO OUTFILE); a server's answer is streamed
   * to the file. `file` must not exist.
   */
  exportNative(select: string, file: string): Promise<void> {
    if (this.embedded) return this.command(`${select} INTO OUTFILE ${sqlString(file)} FORMAT Native`);
    return this.#run(async () => {
      const rs = await this.#client.exec({ query: `${select} FORMAT Native` });
      await pipeline(rs.stream, createWriteStream(file, { flags: 'wx' }));
    });
  }

  /**
   * Insert the Native-format file `file` into `table` (qualified), its columns matched by name to `columns`: the
   * embedded engine reads the file itself (the file() table function); a server gets it streamed as the body.
   */
  importNative(table: string, columns: readonly string[], file: string, settings: ClickHouseSettings = {}): Promise<void> {
    const list = columns.map(ident).join(', ');
    if (this.embedded) return this.command(`INSERT INTO ${table} (${list}) SELECT ${list} FROM file(${sqlString(file)}, 'Native')`, settings);
    return this.#run(async () => {
      const rs = await this.#client.exec({ query: `INSERT INTO ${table} (${list}) FORMAT Native`, values: createReadStream(file), clickhouse_settings: settings });
      for await (const _ of rs.stream); // the answer carries nothing; reading it to the end frees the socket
    });
  }

  query<T>(query: string, params: QueryParams = {}): Promise<T[]> {
    return this.#run(async () => {
      const rs = await this.#client.query({ query, query_params: params, format: 'JSONEachRow' });
      return rs.json<T>();
    });
  }

  /**
   * Insert rows. With a `token`, a retry of the same batch is dropped by ClickHouse's insert deduplication (the
   * `requests` table and its rollups keep a deduplication window), in the table and in its materialized views.
   */
  insert(table: string, values: readonly Record<string, unknown>[], token?: string): Promise<void> {
    // Always set, token or not: the embedded engine keeps per-request settings for the session, and a token left
    // over from an earlier insert would make this one look like its retry.
    const clickhouse_settings = {
      insert_deduplicate: 1, insert_deduplication_token: token ?? '', deduplicate_blocks_in_dependent_materialized_views: 1,
      ...(this.#foregroundDistributed ? { distributed_foreground_insert: 1 } : {}),
    } as const;
    return this.#run(async () => {
      await this.#client.insert({ table: this.t(table), values: values as Record<string, unknown>[], format: 'JSONEachRow', clickhouse_settings });
    });
  }

  /**
   * Does the store answer a query? Bounded on a server (a server that accepts the connection and never answers
   * must not hold a readiness probe for the whole request timeout).
   */
  async ping(): Promise<boolean> {
    try {
      const rows = await this.#run(async () => {
        const abort_signal = this.embedded ? undefined : AbortSignal.timeout(this.#pingTimeoutMs);
        const rs = await this.#client.query({ query: 'SELECT 1 AS ok', format: 'JSONEachRow', ...(abort_signal === undefined ? {} : { abort_signal }) });
        return rs.json<{ ok: number }>();
      });
      return Number(rows[0]?.ok) === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#tail;
    this.#closed = true;
    await this.#client.close();
  }
}

/** A ClickHouse string literal. */
export function sqlString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A ClickHouse identifier, back-quoted. */
export function ident(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}

export function openStore(storage: Pick<Config['storage'], 'clickhouse_url' | 'database' | 'data_dir' | 'username' | 'password'> & Partial<Config['storage']>): Store {
  if (storage.clickhouse_url) {
    const requestTimeout = storage.request_timeout_ms ?? 30_000;
    const client = createClient({
      url: storage.clickhouse_url,
      username: storage.username,
      password: storage.password,
      request_timeout: requestTimeout,
      // The client would print every failed request to stderr, once per retry while a server is down; the writer
      // and /ready report storage failures through the app's logger and metrics instead (docs/recording.md).
      log: { level: ClickHouseLogLevel.OFF },
    });
    const sharded = storage.sharded === true && (storage.cluster ?? '') !== '';
    return new Store(client, storage.database, false, { pingTimeoutMs: Math.min(2000, requestTimeout), sharded });
  }
  const path = resolve(storage.data_dir);
  mkdirSync(path, { recursive: true });
  // chdb re-exports @clickhouse/client-common's Connection type, which @clickhouse/client bundles as its own copy;
  // the shapes are the same, the declarations are not, hence the cast.
  const connection = loadChdb().createChdbConnection({ path }) as unknown as ClientConnection;
  const client = createClient({ connection });
  return new Store(client, storage.database, true);
}
