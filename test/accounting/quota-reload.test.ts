// A config reload that changes a quota is taken at once: /api/quota computes its figures anew, and the combo's
// verdict is the new limit's from the same read (src/accounting/quota.ts `reconfigured`). Before, the last snapshot
// (up to a second old) stood: after the limit was raised the combo went on answering 503 for up to a second.

import t from 'tap';
import { request } from 'undici';
import { startApp, testConfig } from '../helpers/app.js';
import { startFakeOpenAI, fakeProvider } from '../helpers/fake-openai.js';

const up = await startFakeOpenAI(t);
const raw = (quota: Record<string, unknown>) => ({
  providers: { lim: fakeProvider(up.baseUrl, { group: 'free', models: { m: { kind: 'llm' } }, quota }) },
  combos: { c: { strategy: 'fallback', models: ['lim/m'] } },
});
const gw = await startApp(t, raw({ kind: 'daily_requests', limit: 1 }));
const reload = (quota: Record<string, unknown>) => gw.holder.replace(testConfig(raw(quota), gw.holder.current.storage.data_dir));

const chat = async () => {
  const r = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'c', messages: [{ role: 'user', content: 'hi' }] }) });
  await r.body.text();
  return r.statusCode;
};
interface Entry { exhausted: boolean; quota: { used: number; limit: number }; reset: { time?: string } }
const entry = async () => ((await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: Entry[] }).providers[0]!;

t.test('a limit raised: the combo calls the provider again at once', async (t) => {
  t.equal(await chat(), 200);
  t.equal(await chat(), 503, 'its one request used: skipped');
  await gw.flush();
  // The cached snapshot has the call stored (so it is what the reload replaces).
  for (let i = 0; i < 50 && !(await entry()).exhausted; i++) await new Promise((r) => setTimeout(r, 50));
  reload({ kind: 'daily_requests', limit: 100 });
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push(await chat());
  t.same(statuses, [200, 200, 200, 200, 200], 'right after the reload');
  t.equal(up.received.length, 6);
  // (/api/quota's snapshot, computed at the reload, is cached a second: the 5 calls since may not be in its `used`.)
  t.match(await entry(), { exhausted: false, quota: { limit: 100 } });
});

t.test('a limit lowered under what is used: skipped at once', async (t) => {
  reload({ kind: 'daily_requests', limit: 6 });
  t.equal(await chat(), 503);
  t.equal(up.received.length, 6, 'no call past the new limit');
  t.match(await entry(), { exhausted: true, quota: { used: 6, limit: 6 } });
});

t.test('a window changed: /api/quota reads it anew at once', async (t) => {
  reload({ kind: 'daily_requests', limit: 6, reset_time: '23:59Z' });
  t.match(await entry(), { quota: { limit: 6 }, reset: { time: '23:59Z' } });
});
