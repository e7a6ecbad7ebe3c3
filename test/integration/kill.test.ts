// kill -9 under load loses no acknowledged request (issue 13): the built CLI serves the mock provider (streams that
// last a few hundred ms, so many are in flight), 12 clients send streamed and unary requests, the process is killed
// with SIGKILL, restarted on the same data directory, and then every request a client got a complete answer for is
// in `requests` exactly once, and every request that was in flight at the kill is there too, as `interrupted`. Two
// rounds: the second kills a process that is itself replaying what the first left. kill.server.test.ts runs the same
// on the server path (the gateway writes to a ClickHouse server over HTTP; its spool is still its own data_dir).

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { openStore } from '../../src/store/client.js';
import { testStorage } from '../helpers/store-paths.js';
import { demoProvidersYaml } from '../helpers/app.js';
import { serveCli, type Proc } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';
import { metricValue } from '../helpers/prom.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const dir = tempDir(t, 'tollgate-kill-');
const dataDir = join(dir, 'data');
// Embedded: the gateway's own engine under data_dir. Server path: a ClickHouse server in a child process.
const { storage } = await testStorage(t);
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const file = join(dir, 'config.yaml');
writeFileSync(file, `
server: { host: 127.0.0.1, port: ${port} }
storage:
  data_dir: ${JSON.stringify(dataDir)}
  clickhouse_url: ${JSON.stringify(storage.clickhouse_url ?? '')}
  batch: { flush_ms: 300 }
${demoProvidersYaml({ chunks: 8, latency_ms: 5, chunk_delay_ms: 40 })}`);

const serve = (): Promise<Proc> => serveCli(t, file, base, dir);

interface Traffic {
  /** Requests a client got a complete answer for. */
  readonly acked: Set<string>;
  /** Requests whose answer had started (x-request-id seen) but not finished when the process died. */
  readonly cut: Set<string>;
}

/** `clients` loops of requests until `stop()`; each records what it was told. */
function load(clients: number): { traffic: Traffic; stop: () => Promise<void> } {
  const traffic: Traffic = { acked: new Set(), cut: new Set() };
  let running = true;
  const one = async (i: number): Promise<void> => {
    for (let n = 0; running; n++) {
      const stream = (i + n) % 2 === 0;
      let id: string | undefined;
      try {
        const res = await request(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'demo/echo-1', stream, messages: [{ role: 'user', content: `client ${i} request ${n}` }] }),
        });
        id = String(res.headers['x-request-id']);
        const text = await res.body.text();
        const complete = res.statusCode === 200 && (stream ? text.includes('data: [DONE]') : JSON.parse(text).choices !== undefined);
        if (complete) traffic.acked.add(id);
        else traffic.cut.add(id);
      } catch {
        if (id !== undefined) traffic.cut.add(id);
        await new Promise((r) => setTimeout(r, 20)); // the server is gone; don't spin
      }
    }
  };
  const loops = Array.from({ length: clients }, (_, i) => one(i));
  return {
    traffic,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * What a start found in the spool an earlier process left: counted once the leftovers are read, which happens after the
 * gateway listens (docs/recording.md, "Restart"); /ready is 503 until then, so it is read once /ready is 200.
 */
async function recoveredAtStart(): Promise<number> {
  await waitFor(async () => {
    const res = await request(`${base}/ready`);
    await res.body.dump();
    return res.statusCode === 200;
  }, 30_000);
  return metricValue(await (await request(`${base}/metrics`)).body.text(), 'tollgate_usage_rows_recovered_total', {});
}

const rounds: Traffic[] = [];
let recovered = 0;
for (let round = 1; round <= 2; round++) {
  const p = await serve();
  if (round > 1) recovered += await recoveredAtStart();
  const traffic = load(12);
  await waitFor(() => traffic.traffic.acked.size >= 150 * round, 30_000);
  p.child.kill('SIGKILL');
  await p.exited;
  await traffic.stop();
  rounds.push(traffic.traffic);
}

// The last start: replays what the second kill left, then stops cleanly so this process can open the store.
const last = await serve();
recovered += await recoveredAtStart();
await waitFor(async () => {
  const ready = (await (await request(`${base}/ready`)).body.json()) as { spooled?: number };
  return ready.spooled === 0;
}, 30_000);
last.child.kill('SIGTERM');
await last.exited;

const store = openStore({ clickhouse_url: storage.clickhouse_url ?? '', database: 'tollgate', data_dir: dataDir, username: 'default', password: '' });
t.teardown(() => store.close());
const all = await store.query<{ id: string; status: string; provider: string; model: string; requested_model: string }>(
  `SELECT toString(request_id) AS id, status, provider, model, requested_model FROM ${store.t('requests')} FINAL`,
);
const rows = new Map(all.map((r) => [r.id, r.status]));
const [dupes] = await store.query<{ n: string; ids: string }>(`SELECT count() AS n, uniqExact(request_id) AS ids FROM ${store.t('requests')}`);

t.test('every acknowledged request is in the record, after each kill', async (t) => {
  rounds.forEach((r, i) => {
    const missing = [...r.acked].filter((id) => !rows.has(id));
    t.same(missing, [], `round ${i + 1}: all ${r.acked.size} acknowledged requests are rows`);
  });
});

t.test('requests in flight at the kill are recorded as interrupted', async (t) => {
  const cut = rounds.flatMap((r) => [...r.cut]);
  t.ok(cut.length > 0, `${cut.length} answers were cut by the kills`);
  const statuses = cut.map((id) => rows.get(id) ?? 'missing');
  t.notOk(statuses.includes('missing'), 'each cut request is a row');
  t.ok(statuses.filter((s) => s === 'interrupted').length > 0, `interrupted rows: ${statuses.filter((s) => s === 'interrupted').length} of ${cut.length}`);
  t.ok(recovered > 0, `the restarts reported ${recovered} recovered rows`);
  // the marker is made after the handler's synchronous start: an interrupted request names what it was routed to
  const interrupted = all.filter((r) => r.status === 'interrupted');
  t.same([...new Set(interrupted.map((r) => `${r.provider} ${r.model} ${r.requested_model}`))], ['demo demo/echo-1 demo/echo-1'], 'each interrupted row has its provider and model');
});

t.test('nothing is counted twice', async (t) => {
  t.equal(Number(dupes!.n), Number(dupes!.ids), 'one row per request_id in the raw table (the replays were deduplicated)');
  const [hourly] = await store.query<{ raw: string; rollup: string }>(
    `SELECT (SELECT count() FROM ${store.t('requests')} FINAL WHERE kind IN ('request', 'combo')) AS raw,
            (SELECT sum(rows) FROM ${store.t('usage_hourly')} WHERE kind IN ('request', 'combo')) AS rollup`);
  t.equal(Number(hourly!.rollup), Number(hourly!.raw), 'the hourly rollup counts each request once');
});
