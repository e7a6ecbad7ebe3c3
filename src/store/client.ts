// One ClickHouse client, two back ends (DESIGN.md decision 1): a server when storage.clickhouse_url is set,
// otherwise the embedded engine from chdb under storage.data_dir. Same SQL for both. The embedded engine runs one
// query at a time per connection, so operations are serialised here; a server takes them concurrently. (Reads on
// connections of their own beside the one that writes were tried, and missed a table a migration had just created
// under concurrent use: docs/recording.md, "Embedded or server".)
//
// The client library, and the embedded engine (about 170 MiB of native library mapped, 100-200 ms to load), are
// loaded by the first operation, never by opening: on the server path the engine is never loaded at all, and the app
// opens the store after it listens (src/store/opening.ts).

import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ClickHouseClient, createClient } from '@clickhouse/client';
import type { Config } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { embeddedConnection } from './embedded.js';

type ClientConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>;

export type QueryParams = Record<string, unknown>;

/** What a gated store waits for before each operation: resolves once the store is usable, rejects with why not. */
export interface StoreGate {
  wait(): Promise<void>;
}

/** The client and the queue of one connection, shared by a store and its gated views (`gated`). */
interface Engine {
  /** Created by the first operation (`connect`), so that opening a store loads nothing. */
  client: Promise<ClickHouseClient> | null;
  readonly connect: () => Promise<ClickHouseClient>;
  tail: Promise<unknown>;
  closed: boolean;
}

export class Store {
  readonly database: string;
  readonly embedded: boolean;
  #engine: Engine;
  #gate: StoreGate | null = null;
  readonly #pingTimeoutMs: number;
  readonly #foregroundDistributed: boolean;

  /**
   * `client`: the client, or how to create it on first use. `pingTimeoutMs`: how long `ping` waits for a server (the
   * embedded engine answers or throws). `sharded`: tables are Distributed, and an insert is acknowledged only once
   * every shard has its rows (`distributed_foreground_insert`).
   */
  constructor(client: ClickHouseClient | (() => Promise<ClickHouseClient>), database: string, embedded: boolean, opts: { pingTimeoutMs?: number; sharded?: boolean } = {}) {
    this.#engine = typeof client === 'function'
      ? { client: null, connect: client, tail: Promise.resolve(), closed: false }
      : { client: Promise.resolve(client), connect: () => Promise.resolve(client), tail: Promise.resolve(), closed: false };
    this.database = database;
    this.embedded = embedded;
    this.#pingTimeoutMs = opts.pingTimeoutMs ?? 2000;
    this.#foregroundDistributed = opts.sharded === true;
  }

  /**
   * The same store (same connection, same queue), whose every operation first waits for `gate`: the app's view of a
   * store that is still being opened and migrated in the background. `close` on either closes the connection.
   */
  gated(gate: StoreGate): Store {
    const view = new Store(() => Promise.reject(new Error('unused')), this.database, this.embedded, { pingTimeoutMs: this.#pingTimeoutMs, sharded: this.#foregroundDistributed });
    view.#engine = this.#engine;
    view.#gate = gate;
    return view;
  }

  /** Has the connection been created (the embedded engine loaded)? */
  get connected(): boolean {
    return this.#engine.client !== null;
  }

  /** Qualified table name. */
  t(table: string): string {
    return `${this.database}.${table}`;
  }

  #client(): Promise<ClickHouseClient> {
    const e = this.#engine;
    if (e.client === null) {
      const client = e.connect();
      e.client = client;
      // A connection that could not be made is not kept: the next operation tries again (the opening retries on this
      // same store).
      client.catch(() => {
        if (e.client === client) e.client = null;
      });
    }
    return e.client;
  }

  #run<T>(op: (client: ClickHouseClient) => Promise<T>): Promise<T> {
    if (this.#engine.closed) return Promise.reject(new Error('store is closed'));
    // The gate is waited for before joining the queue: the migrations that open the gate run through that queue.
    return this.#gate === null ? this.#enqueue(op) : this.#gate.wait().then(() => this.#enqueue(op));
  }

  #enqueue<T>(op: (client: ClickHouseClient) => Promise<T>): Promise<T> {
    const e = this.#engine;
    if (e.closed) return Promise.reject(new Error('store is closed'));
    const run = async (): Promise<T> => {
      if (e.closed) throw new Error('store is closed');
      return op(await this.#client());
    };
    if (!this.embedded) return run();
    const next = e.tail.then(run, run);
    e.tail = next.catch(() => undefined);
    return next;
  }

  /**
   * Run a statement. Settings go in the statement itself (`settingsClause`): the client's `clickhouse_settings` would
   * reach the embedded engine as `SET` statements that stay set on its session for every statement after.
   */
  command(query: string): Promise<void> {
    return this.#run(async (client) => {
      await client.command({ query });
    });
  }

  /**
   * Write the result of `select` (no FORMAT clause) to the local file `file` in ClickHouse's Native format, without
   * holding it in memory: the embedded engine writes the file itself (INTO OUTFILE); a server's answer is streamed
   * to the file. `file` must not exist.
   */
  exportNative(select: string, file: string): Promise<void> {
    if (this.embedded) return this.command(`${select} INTO OUTFILE ${sqlString(file)} FORMAT Native`);
    return this.#run(async (client) => {
      const rs = await client.exec({ query: `${select} FORMAT Native` });
      await pipeline(rs.stream, createWriteStream(file, { flags: 'wx' }));
    });
  }

  /**
   * Insert the Native-format file `file` into `table` (qualified), its columns matched by name to `columns`: the
   * embedded engine reads the file itself (the file() table function); a server gets it streamed as the body.
   */
  importNative(table: string, columns: readonly string[], file: string, settings: Settings = {}): Promise<void> {
    const list = columns.map(ident).join(', ');
    const into = `INSERT INTO ${table} (${list}) ${settingsClause(settings)}`;
    if (this.embedded) return this.command(`${into} SELECT ${list} FROM file(${sqlString(file)}, 'Native')`);
    return this.#run(async (client) => {
      const rs = await client.exec({ query: `${into} FORMAT Native`, values: createReadStream(file) });
      for await (const _ of rs.stream); // the answer carries nothing; reading it to the end frees the socket
    });
  }

  /**
   * A read. A store that cannot be reached is TOLLGATE_ERR_STORE_UNAVAILABLE (503, the reason said): an `/api` read
   * while ClickHouse was down answered 500 INTERNAL ("a bug"), logged with a stack at every poll of a dashboard.
   */
  query<T>(query: string, params: QueryParams = {}): Promise<T[]> {
    return this.#run(async (client) => {
      try {
        const rs = await client.query({ query, query_params: params, format: 'JSONEachRow' });
        return await rs.json<T>();
      } catch (err) {
        throw unreachable(err, this.embedded) ?? err;
      }
    });
  }

  /**
   * Insert rows. With a `token`, a retry of the same batch is dropped by ClickHouse's insert deduplication (the
   * `requests` table and its rollups keep a deduplication window), in the table and in its materialized views.
   */
  insert(table: string, values: readonly Record<string, unknown>[], token?: string): Promise<void> {
    return this.insertLines(table, values.map((v) => JSON.stringify(v)), token);
  }

  /**
   * Insert rows given as JSON lines, as they are, with the same deduplication as `insert`: the spool's segments go to
   * the store without being parsed and serialised again. With `columns`, each line is an array of a row's values in
   * those columns (JSONCompactEachRow; a null is the column's default: what a begin marker left out); without, an
   * object (JSONEachRow).
   *
   * The settings are the statement's own (`INSERT ... SETTINGS ... FORMAT`), not the client's `clickhouse_settings`:
   * the embedded engine's adapter sends those as `SET ...;` statements before the INSERT, which made the engine split
   * a multi-statement text and read through the whole body to find its end (about 12 µs of CPU a row beside the
   * parse's 20; docs/benchmarks.md), and left them set on the session afterwards.
   */
  insertLines(table: string, lines: readonly string[], token?: string, columns: readonly string[] | null = null): Promise<void> {
    if (lines.length === 0) return this.#run(async () => undefined);
    const query =
      columns === null
        ? `INSERT INTO ${this.t(table)} ${this.#insertSettings(token)} FORMAT JSONEachRow`
        : `INSERT INTO ${this.t(table)} (${columns.map(ident).join(', ')}) ${this.#insertSettings(token)} FORMAT JSONCompactEachRow`;
    // The embedded engine takes the statement and its rows as one text: given them as one flat string here, it is
    // copied once (into the engine); given the rows as `values`, its adapter trimmed them and joined them to the
    // statement, and each step copied the whole text again (about 2.5 MB an insert under load; docs/benchmarks.md).
    const exec = this.embedded
      ? { query: [query, ...lines, ''].join('\n') }
      : { query, values: Readable.from([`${lines.join('\n')}\n`]) };
    return this.#run(async (client) => {
      const rs = await client.exec(exec);
      for await (const _ of rs.stream); // the answer carries nothing; reading it to the end frees the socket
    });
  }

  /**
   * The insert's SETTINGS clause: deduplication, the token always stated ('' for none), so every insert is its own;
   * a null for a column that is not Nullable is its default (ClickHouse's default too, stated so that a server's profile
   * cannot turn it off: a begin marker's row, and a row of the spool parsed again, hold such nulls).
   */
  #insertSettings(token: string | undefined): string {
    return settingsClause({
      insert_deduplicate: 1, insert_deduplication_token: token ?? '', deduplicate_blocks_in_dependent_materialized_views: 1,
      input_format_null_as_default: 1,
      ...(this.#foregroundDistributed ? { distributed_foreground_insert: 1 } : {}),
    });
  }

  /**
   * Does the store answer a query? Bounded on a server (a server that accepts the connection and never answers
   * must not hold a readiness probe for the whole request timeout).
   */
  async ping(): Promise<boolean> {
    try {
      const rows = await this.#run(async (client) => {
        const abort_signal = this.embedded ? undefined : AbortSignal.timeout(this.#pingTimeoutMs);
        const rs = await client.query({ query: 'SELECT 1 AS ok', format: 'JSONEachRow', ...(abort_signal === undefined ? {} : { abort_signal }) });
        return rs.json<{ ok: number }>();
      });
      return Number(rows[0]?.ok) === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    const e = this.#engine;
    if (e.closed) return;
    await e.tail;
    e.closed = true;
    if (e.client === null) return; // never used: nothing was loaded or connected
    const client = await e.client.catch(() => null);
    await client?.close();
  }
}

/** Settings of one statement, by name. */
export type Settings = Readonly<Record<string, string | number>>;

/**
 * A statement's own SETTINGS clause (`SETTINGS a = 1, b = 'x'`; '' for none), where an INSERT takes it (before its
 * SELECT or FORMAT) or at the end of another statement: settings that apply to that statement only, on a server and
 * on the embedded engine alike. Names are the caller's constants; values are numbers or quoted strings.
 */
/** Transport failures: the store is not there, or not answering. */
const NET_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/**
 * The 503 for an error that says the store cannot be reached, else null: a refused or reset connection, no answer
 * within `request_timeout_ms`, or (server path) an HTTP error that is not ClickHouse's own exception
 * (a proxy's 502/503 page, which the client raises as a plain Error). ClickHouse's own exceptions and our bugs stay
 * what they are. The reason names a code, never the URL.
 */
function unreachable(err: unknown, embedded: boolean): TollgateError | null {
  if (!(err instanceof Error)) return null;
  const code = (err as { code?: unknown }).code;
  let why: string | null = null;
  if (typeof code === 'string' && NET_CODES.has(code)) why = code;
  else if (err.message === 'Timeout error.' || err.message === 'socket hang up') why = err.message.replace(/\.$/, '').toLowerCase();
  else if (!embedded && err.constructor === Error && code === undefined) why = 'an HTTP error that is not a ClickHouse exception';
  return why === null ? null : new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', `ClickHouse cannot be read now (${why})`, { cause: err });
}

export function settingsClause(settings: Settings): string {
  const entries = Object.entries(settings);
  if (entries.length === 0) return '';
  for (const [k] of entries) if (!/^[a-z_][a-z0-9_]*$/.test(k)) throw new Error(`not a setting name: ${JSON.stringify(k)}`);
  return `SETTINGS ${entries.map(([k, v]) => `${k} = ${typeof v === 'number' ? v : sqlString(v)}`).join(', ')}`;
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
    const url = storage.clickhouse_url;
    const connect = async () => {
      const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client');
      return createClient({
        url,
        username: storage.username,
        password: storage.password,
        request_timeout: requestTimeout,
        // The client would print every failed request to stderr, once per retry while a server is down; the writer
        // and /ready report storage failures through the app's logger and metrics instead (docs/recording.md).
        log: { level: ClickHouseLogLevel.OFF },
      });
    };
    const sharded = storage.sharded === true && (storage.cluster ?? '') !== '';
    return new Store(connect, storage.database, false, { pingTimeoutMs: Math.min(2000, requestTimeout), sharded });
  }
  const path = resolve(storage.data_dir);
  try {
    mkdirSync(path, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? 'it, or a directory above it, is a file' : (err as Error).message;
    throw new Error(`storage.data_dir ${path} cannot be used (${why}): point storage.data_dir at a directory the gateway may write`, { cause: err });
  }
  return new Store(async () => {
    const [{ createClient }, connection] = await Promise.all([import('@clickhouse/client'), embeddedConnection(path)]);
    return createClient({ connection: connection as ClientConnection });
  }, storage.database, true);
}
