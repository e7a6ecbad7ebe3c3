// The server path's replay of a segment that landed before a kill (a replica's insert took, its answer was lost, the
// replica was killed before deleting the segment) once the server no longer remembers the insert's token: a server
// keeps the last `non_replicated_deduplication_window` blocks of every replica together (1,000), so a replica down
// while the others insert a thousand times replays into a table and views that count its rows again. The app settles
// the oldest leftover segment on the server path too (src/app.ts, settleLanded): the rows once in the table and in
// both rollups, and /api/usage counting each request once. The window is made 1 here so that one other insert is enough.

import t from 'tap';
import { join } from 'node:path';
import { request } from 'undici';
import { openStore } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrations.js';
import { REQUEST_COLUMNS, type RequestRow } from '../../src/store/rows.js';
import { Spool } from '../../src/store/spool.js';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';

const server = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-chserver-') });
const storage = { clickhouse_url: server.url, database: 'tollgate', username: 'default', password: '' };
const dataDir = tempDir(t, 'tollgate-replica-');
const TAG = 'replayed';
const at = Date.now() - 60_000;
const rows: RequestRow[] = Array.from({ length: 7 }, (_, i) => rec({ at: new Date(at + i * 1000).toISOString(), model: 'paid/m', key: TAG, usage: [3, 2] }));

t.test('a landed segment replayed after the server forgot its token is counted once', async (t) => {
  const store = openStore({ ...storage, data_dir: tempDir(t) });
  t.teardown(() => store.close());
  await migrate(store);
  for (const table of ['requests', 'usage_hourly', 'usage_daily']) {
    await store.command(`ALTER TABLE ${store.t(table)} MODIFY SETTING non_replicated_deduplication_window = 1`);
  }
  // The first process: its segment inserted as the writer inserts it (its lines, its name as the token), never deleted.
  const spool = new Spool<RequestRow>({ dir: join(dataDir, 'spool'), commitMs: 1000, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS }, (r) => String(r.request_id));
  for (const r of rows) spool.append(r);
  await new Promise((r) => setImmediate(r));
  const [seg] = spool.seal();
  const { lines, columns } = spool.readLines(seg!);
  await store.insertLines('requests', lines, `spool-${seg!.name}`, columns);
  spool.close();
  // Another replica's inserts meanwhile: the server's window no longer holds the token.
  for (let i = 0; i < 2; i++) await store.insertLines('requests', [JSON.stringify(rec({ at: new Date(at).toISOString(), model: 'paid/m', key: `other-${i}`, usage: [1, 1] }))], `other-${i}`);

  const gw = await startApp(t, { storage: { clickhouse_url: server.url }, providers: { demo: DEMO_PROVIDER } }, { dataDir });
  await gw.flush();
  const [c] = await store.query<Record<string, string>>(
    `SELECT (SELECT count() FROM ${store.t('requests')} WHERE api_key_name = {tag:String}) AS raw,
            (SELECT sum(rows) FROM ${store.t('usage_hourly')} WHERE api_key_name = {tag:String}) AS hourly,
            (SELECT sum(rows) FROM ${store.t('usage_daily')} WHERE api_key_name = {tag:String}) AS daily`,
    { tag: TAG },
  );
  t.same({ raw: Number(c!.raw), hourly: Number(c!.hourly), daily: Number(c!.daily) }, { raw: 7, hourly: 7, daily: 7 }, 'each row once in the table and in both rollups');
  const usage = (await (await request(`${gw.url}/api/usage?period=24h&api_key=${TAG}`)).body.json()) as { summary: { requests: number } };
  t.equal(usage.summary.requests, 7, '/api/usage counts each request once');
  const ready = (await (await request(`${gw.url}/ready`)).body.json()) as { spooled: number };
  t.equal(ready.spooled, 0, 'nothing left in the spool');
});
