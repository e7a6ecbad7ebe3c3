// Start (issue 17): the gateway answers before its store is open. build() loads and migrates nothing; the store opens
// in the background once the app listens (or at its first use), requests served meanwhile are answered and their
// rows wait in the spool, /ready says why it is not ready, and every row lands once the store is there. Runs on the
// embedded engine; startup.server.test.ts runs the same against a ClickHouse server that is down at start.

import t from 'tap';
import { build } from '../../src/app.js';
import { ConfigHolder } from '../../src/config/watch.js';
import { DEMO_PROVIDER, testConfig } from '../helpers/app.js';
import { testStorage } from '../helpers/store-paths.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const CHAT = { model: 'demo/echo-1', messages: [{ role: 'user', content: 'before the store' }] };
/** One data directory for the file: the embedded engine binds one per process. */
const dataDir = tempDir(t);

t.test('a request made before the store is open is served, and its row lands once the store is up', async (t) => {
  const { storage, server } = await testStorage(t);
  // On the server path the server refuses connections at start: the opening fails and is retried until it comes back.
  if (server !== null) await server.refuse();
  // A flush interval far away: nothing but the test decides when the store is first used.
  const holder = new ConfigHolder(testConfig({ storage: { ...storage, batch: { flush_ms: 60_000 } }, providers: { demo: DEMO_PROVIDER } }, dataDir));
  const app = await build({ config: holder, logger: false, processMetrics: false });
  t.teardown(() => app.close());
  let storeReady = false;
  void app.tollgate.storeReady.then(() => (storeReady = true));

  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: CHAT });
  t.equal(res.statusCode, 200, 'the request is answered');
  t.match(res.json(), { object: 'chat.completion', usage: { prompt_tokens: Number } }, 'with the mock answer');
  const id = String(res.headers['x-request-id']);
  t.equal(storeReady, false, 'before the store was open');
  t.equal(app.tollgate.writer.depth, 1, 'its row waits in the spool');

  const notReady = await app.inject({ method: 'GET', url: '/ready' });
  t.equal(notReady.statusCode, 503, '/ready is 503 while the store is not open');
  t.equal(notReady.json().error.code, 'TOLLGATE_ERR_STORE_UNAVAILABLE');
  t.match(notReady.json().error.message, /is not open yet: the store is being opened and migrated; 1 usage rows wait in the spool/, notReady.json().error.message);

  // Listening opens the store (in the background).
  await app.listen({ host: '127.0.0.1', port: 0 });
  if (server !== null) {
    // The first attempt fails against the refusing server; /ready says so, the request path is unaffected.
    await waitFor(async () => /could not be opened/.test((await app.inject({ method: 'GET', url: '/ready' })).json().error?.message ?? ''), 10_000);
    t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: CHAT })).statusCode, 200, 'served while the server is down');
    t.equal(storeReady, false, 'not ready while the server refuses');
    await server.restore();
  }
  await app.tollgate.storeReady;
  t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200, '/ready is 200 once the store is open');

  await app.tollgate.writer.flush();
  const { store } = app.tollgate;
  const rows = await store.query<{ id: string; status: string; provider: string }>(
    `SELECT toString(request_id) AS id, status, provider FROM ${store.t('requests')} FINAL ORDER BY ts`,
  );
  t.match(rows.find((r) => r.id === id), { status: 'success', provider: 'demo' }, 'the request made before the store was open is recorded');
  t.equal(rows.length, server === null ? 1 : 2, 'every request served is recorded, once');
  const versions = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('schema_migrations')} FINAL`);
  t.ok(Number(versions[0]?.n) >= 7, 'the migrations ran');
});

t.test('an app closed before its store opened closes cleanly; its rows wait in the spool for the next start', async (t) => {
  const { storage, server } = await testStorage(t);
  if (server !== null) await server.refuse();
  const holder = new ConfigHolder(testConfig({ storage: { ...storage, batch: { flush_ms: 60_000 } }, providers: { demo: DEMO_PROVIDER } }, dataDir));
  const app = await build({ config: holder, logger: false, processMetrics: false });
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: CHAT });
  t.equal(res.statusCode, 200);
  if (server !== null) await app.listen({ host: '127.0.0.1', port: 0 });
  await app.close();
  await t.rejects(app.tollgate.storeReady, { code: 'TOLLGATE_ERR_STORE_UNAVAILABLE' }, 'storeReady rejects: closed before the store was open');
  t.equal(app.tollgate.writer.depth, 1, 'the row stays in the spool');

  if (server !== null) await server.restore();
  const again = await build({ config: holder, logger: false, processMetrics: false });
  t.teardown(() => again.close());
  await again.listen({ host: '127.0.0.1', port: 0 });
  await again.tollgate.storeReady;
  await again.tollgate.writer.flush();
  const id = String(res.headers['x-request-id']);
  const rows = await again.tollgate.store.query<{ n: string }>(`SELECT count() AS n FROM ${again.tollgate.store.t('requests')} FINAL WHERE toString(request_id) = {id:String}`, { id });
  t.equal(Number(rows[0]?.n), 1, 'the next start records it, once');
});
