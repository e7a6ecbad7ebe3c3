// The two storage paths a store suite runs on (DESIGN.md decision 1): the embedded engine (chdb, in this process) and
// a ClickHouse server over HTTP (the test server of clickhouse-http.ts, in a child process on its own data directory).
// A suite opens its store with openTestStore(); it runs embedded by default, and a `*.server.test.ts` file that calls
// useServerPath() before importing the suite runs the same cases against the server. tap runs each file in its own
// process, which suits chdb's one data directory per process.

import { openStore, type Store } from '../../src/store/client.js';
import { spawnClickHouseHttp, type ClickHouseControls } from './clickhouse-http.js';
import { tempDir, type Teardown } from './tmp.js';

export type StorePath = 'embedded' | 'server';

let current: StorePath = 'embedded';

/** Run the suites imported after this call against a ClickHouse server. */
export function useServerPath(): void {
  current = 'server';
}

export function storePath(): StorePath {
  return current;
}

/**
 * The `storage` section of a Tollgate config on the current path: nothing for the embedded engine (the app's
 * data_dir holds it); for the server path, a test server in a child process and its URL.
 */
export async function testStorage(t: Teardown): Promise<{ storage: { clickhouse_url?: string }; server: ClickHouseControls | null }> {
  if (current === 'embedded') return { storage: {}, server: null };
  const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-chserver-') });
  return { storage: { clickhouse_url: server.url }, server };
}

/** A store on the current path, closed at teardown. */
export async function openTestStore(t: Teardown, opts: { database: string; prefix?: string }): Promise<Store> {
  const { storage } = await testStorage(t);
  const store = openStore({ clickhouse_url: storage.clickhouse_url ?? '', database: opts.database, data_dir: tempDir(t, opts.prefix), username: 'default', password: '' });
  t.teardown(() => store.close());
  return store;
}
