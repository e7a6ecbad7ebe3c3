// The embedded ClickHouse engine (chdb), loaded only when a store on it is first used: the server path
// (storage.clickhouse_url) never loads it, and an install without it (`npm ci --omit=optional`) works on that path.
//
// Memory (docs/benchmarks.md, "Footprint"): most of what the engine costs is its native library, about 170 MiB of
// clean, shared, file-backed pages touched while it loads and links, which no setting changes. What the settings
// below bound is what grows with use: the caches (each defaults to GiBs and fills as data is read) and the
// background pools (a thread each, with its stack and arena, sized for a many-core server). They are server
// settings, so they are given when the engine starts, on a first session that stays open for the connection's life.

import type * as Chdb from 'chdb';
import type * as ChdbConnection from 'chdb/connection';

const MiB = 1024 * 1024;

/**
 * Server settings for the engine in the gateway's process: small caches (the gateway's reads are sums over a rollup
 * and narrow raw ranges, not repeated scans) and background pools sized for a small machine shared with the request
 * path.
 */
export const ENGINE_SETTINGS: Readonly<Record<string, number>> = {
  mark_cache_size: 64 * MiB,
  index_mark_cache_size: 16 * MiB,
  primary_index_cache_size: 32 * MiB,
  uncompressed_cache_size: 0,
  index_uncompressed_cache_size: 0,
  query_condition_cache_size: 16 * MiB,
  compiled_expression_cache_size: 16 * MiB,
  text_index_postings_cache_size: 16 * MiB,
  // merges and mutations: 2 threads (the default 16 is for a server); enough for one insert a second
  background_pool_size: 2,
  background_merges_mutations_concurrency_ratio: 2,
  background_move_pool_size: 1,
  background_fetches_pool_size: 1,
  background_common_pool_size: 2,
  background_buffer_flush_schedule_pool_size: 1,
  background_distributed_schedule_pool_size: 1,
  background_message_broker_schedule_pool_size: 1,
};

interface Loaded {
  readonly Session: typeof Chdb.Session;
  readonly createChdbConnection: typeof ChdbConnection.createChdbConnection;
}

async function load(): Promise<Loaded> {
  try {
    const [root, conn] = await Promise.all([import('chdb'), import('chdb/connection')]);
    const pick = <M extends object>(m: M & { default?: M }): M => ('default' in m && m.default !== undefined ? m.default : m);
    return { Session: pick(root).Session, createChdbConnection: pick(conn).createChdbConnection };
  } catch (err) {
    throw new Error('storage.clickhouse_url is empty, so the embedded ClickHouse engine (the chdb package) is needed, but it is not installed; install it (npm install) or set storage.clickhouse_url', { cause: err });
  }
}

/** Engine arguments for the settings: `--name=value`. */
export function engineArgs(settings: Readonly<Record<string, number>> = ENGINE_SETTINGS): string[] {
  return Object.entries(settings).map(([k, v]) => `--${k}=${v}`);
}

/**
 * A @clickhouse/client connection on the embedded engine with its data in `path`: the engine is started with
 * ENGINE_SETTINGS by a session that is closed with the connection. (chdb re-exports @clickhouse/client-common's
 * Connection type, which @clickhouse/client bundles as its own copy: the caller casts.)
 */
export async function embeddedConnection(path: string): Promise<unknown> {
  const { Session, createChdbConnection } = await load();
  const engine = new Session(path, { connectionArgs: engineArgs() });
  let connection: ReturnType<typeof createChdbConnection>;
  try {
    connection = createChdbConnection({ path });
  } catch (err) {
    engine.close();
    throw err;
  }
  const close = connection.close.bind(connection);
  connection.close = async () => {
    try {
      await close();
    } finally {
      engine.close();
    }
  };
  return connection;
}
