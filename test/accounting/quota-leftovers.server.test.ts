// Rows an earlier process left in the spool count in the quota until they are stored (src/accounting/unstored.ts,
// `addRow`, fed by the spool as it opens: src/app.ts). A gateway restarted while ClickHouse refuses inserts (a server
// whose merges fall behind answers TOO_MANY_PARTS, reads still served) read its quota from the stored rows alone: the
// calls the first process answered were in neither the store nor its own list, so the quota read 0 %, and the alert
// evaluator told a quota reset from it. Server path: the test server of clickhouse-http.ts in a child process, two
// gateways one after the other on one data directory.

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { spawnClickHouseHttp } from '../helpers/clickhouse-http.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

t.test('a restart while the store refuses inserts: the rows left in the spool count in the quota', async (t) => {
  const ch = await spawnClickHouseHttp(t, { dataDir: tempDir(t, 'tollgate-chserver-') });
  const dataDir = tempDir(t);
  const config = {
    storage: { clickhouse_url: ch.url, batch: { flush_ms: 100 } },
    providers: { sub: { ...DEMO_PROVIDER, group: 'subscription', quota: { kind: 'daily_tokens', limit: 55 } } },
  };

  interface QuotaView {
    providers: { id: string; quota: { used: number; limit: number; percentage: number | null } }[];
  }
  async function used(url: string): Promise<number> {
    const res = await fetch(`${url}/api/quota`);
    const body = (await res.json()) as QuotaView;
    return body.providers.find((p) => p.id === 'sub')!.quota.used;
  }
  async function ask(url: string, i: number): Promise<void> {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sub/echo-1', messages: [{ role: 'user', content: `leftover ${i}` }] }),
    });
    t.equal(res.status, 200, `request ${i} answered`);
    await res.text();
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alerts = async (url: string) => ((await (await fetch(`${url}/api/alerts`)).json()) as { alerts: { kind: string }[] }).alerts;

  const first = await startApp(t, config, { dataDir });
  await ch.refuseInserts('requests');
  for (let i = 0; i < 6; i++) await ask(first.url, i);
  // The first gateway counts its own calls while their rows wait in the spool.
  await sleep(1100); // past the quota's cache
  const before = await used(first.url);
  t.equal(before, 48, 'the first gateway\'s quota counts its six unstored calls (8 tokens each)');
  // Past 80 % of the limit: the warning is told (and stored: only the requests table refuses inserts).
  await waitFor(async () => (await alerts(first.url)).some((a) => a.kind === 'quota_warning'), 10_000);
  await first.app.close(); // its one last insert is refused: the rows stay in the spool for the next start

  const second = await startApp(t, config, { dataDir });
  t.equal(second.app.tollgate.writer.depth, 6, 'the second gateway found the six rows in the spool');
  // The writer retries the refused insert meanwhile; the quota must count the six calls all along.
  await sleep(1500);
  t.equal(await used(second.url), before, 'after the restart, with the rows still unstored, the quota counts them');
  t.same((await alerts(second.url)).filter((a) => a.kind === 'quota_reset'), [], 'no quota reset told from the restart');

  // Inserts accepted again: the rows land once, and are counted once (stored now, no longer in the list).
  await ch.healthy();
  await waitFor(() => second.app.tollgate.writer.depth === 0, 30_000);
  await sleep(1100); // past the quota's cache
  t.equal(await used(second.url), before, 'once stored, the same figure: the rows counted once');
  t.same((await alerts(second.url)).filter((a) => a.kind === 'quota_reset'), [], 'still no quota reset');
});
