// A request's details in the console show what its cost was made of beyond the five buckets: the cache writes that
// last an hour (priced apart) and the web searches billed per search (docs/recording.md, "Cost").

import t from 'tap';
import { join } from 'node:path';
import { startApp } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage } from '../helpers/browser.js';
import { FAKE_USAGE, fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { tempDir } from '../helpers/tmp.js';

buildConsole();
const dir = tempDir(t);
const up = await startFakeAnthropic(t);
const gw = await startApp(t, { server: { host: '127.0.0.1' }, storage: { batch: { flush_ms: 50 } }, providers: { anth: fakeAnthropicProvider(up.url) } }, { dataDir: join(dir, 'data') });
const browser = await launchBrowser(t);

t.before(async () => {
  up.next({ kind: 'ok', usage: { ...FAKE_USAGE, cache_creation_input_tokens: 1000, cache_creation_1h: 600, web_searches: 3, service_tier: 'priority' } });
  const r = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'anth/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'search' }] }),
  });
  await r.text();
  if (r.status !== 200) throw new Error(`unexpected status ${r.status}`);
  await gw.flush();
});

t.test("the details name the hour-long cache writes and the searches", async (t) => {
  const { page, context, errors } = await openPage(browser);
  t.teardown(() => context.close());
  page.setDefaultTimeout(5000);
  await page.goto(`${gw.url}/#/activity`);
  const row = page.locator('tr.log-row').first();
  await row.waitFor();
  await row.locator('button.link').click();
  const tokens = page.locator('dialog.details dt:text-is("Tokens") + dd');
  await tokens.waitFor();
  t.match(await tokens.textContent(), /cache write 1,000 \(600 for an hour\)/);
  t.equal((await page.locator('dialog.details dt:text-is("Web searches") + dd').textContent())?.trim(), '3 (billed per search)');
  t.match(await page.locator('dialog.details dt:text-is("Cost") + dd').textContent(), /served at the priority tier/, 'the service tier the cost used');
  t.same(errors, [], 'no console error');
});
