// The gateway end to end on the server path (storage.clickhouse_url): Tollgate in this process talks to a ClickHouse
// server over HTTP (the test server of test/helpers/clickhouse-http.ts, in a child process on its own data
// directory), so this process holds no embedded store. Migrations, /ready, rows, /api/usage and /api/quota; a
// second gateway on the same server applies no migration again and reads the same record.

import t from 'tap';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { tempDir } from '../helpers/tmp.js';

const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-chserver-'), password: 'pw-server-path' });
const raw = {
  storage: { clickhouse_url: server.url, password: 'pw-server-path', database: 'gw' },
  providers: { demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_requests', limit: 100 } } },
};

async function chat(gw: TestApp, stream: boolean): Promise<{ status: number; id: string | null }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', stream, messages: [{ role: 'user', content: 'hello server' }] }),
  });
  await res.text();
  return { status: res.status, id: res.headers.get('x-request-id') };
}

let ids: string[] = [];

t.test('a gateway on a ClickHouse server: migrations, /ready, rows, /api/usage, /api/quota', async (t) => {
  const gw = await startApp(t, raw);
  t.equal(gw.app.tollgate.store.embedded, false, 'the server path');
  const store = gw.app.tollgate.store;
  const versions = await store.query<{ version: number }>(`SELECT version FROM ${store.t('schema_migrations')} FINAL ORDER BY version`);
  t.same(versions.map((v) => Number(v.version)), MIGRATIONS.map((m) => m.version), 'every migration applied on the server');

  const ready = await fetch(`${gw.url}/ready`);
  t.equal(ready.status, 200);
  t.same(await ready.json(), { status: 'ready', store: 'server', spooled: 0 });

  const results = [];
  for (let i = 0; i < 6; i++) results.push(await chat(gw, i % 2 === 1));
  t.same(results.map((r) => r.status), [200, 200, 200, 200, 200, 200]);
  ids = results.map((r) => r.id!);
  const rows = await gw.rows();
  t.same(rows.map((r) => r.request_id).sort(), [...ids].sort(), 'one row per request, each once');
  t.same(new Set(rows.map((r) => r.model)), new Set(['demo/echo-1']));
  t.same(rows.map((r) => r.stream), [false, true, false, true, false, true]);
  const before = await server.stats();
  t.ok(before.inserts >= 1, `the rows went over HTTP (${before.inserts} inserts on the server)`);

  const usage = (await (await fetch(`${gw.url}/api/usage?period=today`)).json()) as { summary: { requests: number; tokens: number }; byModel: { model: string; requests: number }[] };
  t.equal(usage.summary.requests, 6);
  t.same(usage.byModel.map((m) => [m.model, m.requests]), [['demo/echo-1', 6]]);
  const [sums] = await store.query<{ tokens: string }>(`SELECT sum(total_tokens) AS tokens FROM ${store.t('requests')} FINAL`);
  t.equal(usage.summary.tokens, Number(sums!.tokens), '/api/usage agrees with the rows');

  await new Promise((r) => setTimeout(r, 1100)); // past the quota snapshot cache
  const quota = (await (await fetch(`${gw.url}/api/quota`)).json()) as { providers: { id: string; quota: { used: number; limit: number } }[] };
  t.match(quota.providers.find((p) => p.id === 'demo'), { quota: { used: 6, limit: 100 } }, '/api/quota counts the requests from the server');

  const metrics = await gw.metrics();
  t.match(metrics, /tollgate_store_up 1/);
  t.match(metrics, /tollgate_spool_rows 0/);
  await gw.close();
});

t.test('a second gateway on the same server: no migration applied again, the same record', async (t) => {
  const gw = await startApp(t, raw, { dataDir: tempDir(t) });
  const store = gw.app.tollgate.store;
  const [m] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('schema_migrations')}`);
  t.equal(Number(m!.n), MIGRATIONS.length, 'one row per version: nothing re-applied');
  t.same((await gw.rows()).map((r) => r.request_id).sort(), [...ids].sort());
  const usage = (await (await fetch(`${gw.url}/api/usage?period=today`)).json()) as { summary: { requests: number } };
  t.equal(usage.summary.requests, 6);
});

t.test('a wrong password: the store is never opened (no retry can fix it), and the gateway says why', async (t) => {
  const err = await startApp(t, { ...raw, storage: { ...raw.storage, password: 'wrong' } }).catch((e: unknown) => e);
  t.match(err, { type: 'AUTHENTICATION_FAILED' });
});
