// The /api reads while the ClickHouse server cannot be reached (a review of outages): they answered 500
// TOLLGATE_ERR_INTERNAL, "a bug" by docs/errors.md, logged with a stack at each poll. A refused connection, no answer
// within request_timeout_ms, and an HTTP error page that is not ClickHouse's (a proxy's 503) are now 503
// TOLLGATE_ERR_STORE_UNAVAILABLE with the reason, as /ready says; and each read is fine again once the store is back.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { tempDir } from '../helpers/tmp.js';

const READS = ['/api/usage', '/api/usage/logs', '/api/usage/overview', '/api/usage/cost', '/api/usage/hourly', '/api/alerts'];

t.test('each read while the store is refused, hangs, or a proxy answers 503: a 503 saying so', async (t) => {
  const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-chserver-') });
  const gw = await startApp(t, { storage: { clickhouse_url: server.url, request_timeout_ms: 1000 }, providers: { demo: DEMO_PROVIDER } });
  await gw.app.tollgate.storeReady;
  for (const [mode, said] of [['refuse', /ECONNREFUSED/], ['hang', /timeout error/], ['serve503', /not a ClickHouse exception/]] as const) {
    await server[mode]();
    for (const path of READS) {
      const res = await fetch(`${gw.url}${path}`);
      const body = (await res.json()) as { error?: { code: string; message: string } };
      t.equal(res.status, 503, `${mode} ${path}: 503 (before: 500)`);
      t.equal(body.error?.code, 'TOLLGATE_ERR_STORE_UNAVAILABLE', `${mode} ${path}`);
      t.match(body.error?.message, said);
    }
    await server.healthy();
  }
  for (const path of READS) t.equal((await fetch(`${gw.url}${path}`)).status, 200, `${path}: 200 once the store is back`);
});
