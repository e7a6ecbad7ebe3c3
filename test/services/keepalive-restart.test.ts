// Keep-alive after a ping that opened no window, and around live edits (a review of keep-alive):
// - A ping that failed (or was cut by a stop, or by a crash) opens no window, and its claim was keyed by the window's
//   end alone, which the stopped process had won: a restarted gateway (a new instance) lost that key at every look
//   and never pinged the connection again, until a client used it. The key now names the round since the end too.
// - Keep-alive turned off and on again by two live edits while a ping was in flight made a new schedule that knew
//   nothing of it, and this process's own claim let it ping the same window again at once.

import t from 'tap';
import { request } from 'undici';
import { startApp, testConfig } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ask(url: string): Promise<void> {
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sub/gpt-4o', messages: [{ role: 'user', content: 'hello' }] }) });
  await res.body.dump();
}

t.test('a gateway restarted after a failed ping pings the owed window, and the windows after it', async (t) => {
  const dataDir = tempDir(t);
  const fake = await startFakeOpenAI(t);
  const pings = () => fake.received.filter((r) => r.body.max_tokens === 1);
  const raw = { providers: { sub: fakeProvider(fake.baseUrl, { keepalive: { enabled: true, window: '2s' } }) } };
  const first = await startApp(t, raw, { dataDir });
  await ask(first.url);
  fake.next({ kind: 'error', status: 503, body: { error: { message: 'overloaded' } } });
  await waitFor(() => pings().length >= 1, 5000);
  await first.flush();
  await first.close(); // before its retry, a round later
  const second = await startApp(t, raw, { dataDir });
  const before = pings().length;
  await waitFor(() => pings().length > before, 8000).catch(() => undefined);
  t.ok(pings().length > before, `the restarted gateway pinged (${pings().length - before} pings)`);
  await waitFor(() => pings().length > before + 1, 6000).catch(() => undefined);
  t.ok(pings().length > before + 1, 'and the next window too');
  await second.flush();
  const rows = await second.rows(`provider = 'sub' AND kind = 'keepalive' AND status = 'success'`);
  t.ok(rows.length >= 1, 'its pings recorded');
});

t.test('keep-alive off and on again during a ping: one ping for the window', async (t) => {
  const dataDir = tempDir(t);
  const fake = await startFakeOpenAI(t);
  const pings = () => fake.received.filter((r) => r.body.max_tokens === 1);
  const on = { providers: { sub: fakeProvider(fake.baseUrl, { keepalive: { enabled: true, window: '10s' } }) } };
  const off = { providers: { sub: fakeProvider(fake.baseUrl, { keepalive: { enabled: false, window: '10s' } }) } };
  const gw = await startApp(t, on, { dataDir });
  await ask(gw.url);
  fake.next({ kind: 'ok', delayMs: 3000 }); // the first ping takes 3 s
  await waitFor(() => pings().length >= 1, 12_000);
  gw.holder.replace(testConfig(off, dataDir));
  gw.holder.replace(testConfig(on, dataDir));
  await sleep(4000); // the ping ends, well inside the window it opened
  t.equal(pings().length, 1, 'one ping for the window');
});
