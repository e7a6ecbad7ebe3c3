// A store whose connection could not be made tries again on its next operation (src/store/client.ts): the opening
// retries on the same store (src/store/opening.ts), so a failure that passes must not stick. On a server (the test
// server of test/helpers/clickhouse-http.ts) and on the embedded engine.

import t from 'tap';
import { createClient } from '@clickhouse/client';
import { Store } from '../../src/store/client.js';
import { embeddedConnection } from '../../src/store/embedded.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { tempDir } from '../helpers/tmp.js';

type Connection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>;

t.test('server: the first connection fails, the next operation connects', async (t) => {
  const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-connect-srv-') });
  let calls = 0;
  const store = new Store(async () => {
    calls++;
    if (calls === 1) throw new Error('no connection yet');
    return createClient({ url: server.url });
  }, 'default', false);
  t.teardown(() => store.close());
  await t.rejects(store.query('SELECT 1 AS ok'), /no connection yet/);
  t.equal(store.connected, false, 'the failed connection is not kept');
  t.same((await store.query<{ ok: number }>('SELECT 1 AS ok')).map((r) => Number(r.ok)), [1]);
  t.equal(calls, 2);
});

t.test('embedded: the engine connection fails once, the next operation makes it', async (t) => {
  const dir = tempDir(t, 'tollgate-connect-emb-');
  let calls = 0;
  const store = new Store(async () => {
    calls++;
    if (calls === 1) throw new Error('no engine connection yet');
    return createClient({ connection: (await embeddedConnection(dir)) as Connection });
  }, 'default', true);
  t.teardown(() => store.close());
  await t.rejects(store.query('SELECT 1 AS ok'), /no engine connection yet/);
  t.equal(store.connected, false, 'the failed connection is not kept');
  t.same((await store.query<{ ok: number }>('SELECT 1 AS ok')).map((r) => Number(r.ok)), [1]);
  t.equal(calls, 2);
});
