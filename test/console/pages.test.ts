// Every page of the console in a real Chromium, light and dark, at 1280 px and 390 px: each renders its data with no
// console error and no request off the origin, and its screenshot is written to docs/console/ (docs/console.md).
// The gateway has no keys (loopback), so the console asks for none.

import t from 'tap';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { DEMO_PROVIDER, startApp, testConfig } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage, screenshotDir, unlabelledControls, waitForCount, DESKTOP, PHONE } from '../helpers/browser.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';

const PAGES = ['activity', 'overview', 'cost', 'quota', 'alerts', 'settings', 'status'] as const;

buildConsole();
const dir = tempDir(t);
const fake = await startFakeOpenAI(t);
const raw = {
  server: { host: '127.0.0.1', public_url: '' },
  storage: { data_dir: join(dir, 'data'), batch: { flush_ms: 50 } },
  providers: {
    fake: fakeProvider(fake.baseUrl, { quota: { kind: 'daily_tokens', limit: 200, reset_time: '00:00Z' } }),
    demo: { ...DEMO_PROVIDER, name: 'Demo (built-in mock)', group: 'paid', models: { 'echo-1': { kind: 'llm' }, 'echo-mini': { kind: 'llm', price: { input: 0.1, output: 0.4 } } } },
  },
  combos: { smart: { strategy: 'fallback', models: ['fake/gpt-4o', 'demo/echo-1'] } },
  budgets: { daily_usd: 0.0002, monthly_usd: 5, timezone: 'UTC' },
};
const configFile = join(dir, 'config.yaml');
writeFileSync(configFile, `# The console's screenshot gateway.\n${stringify(raw)}`);
const gw = await startApp(t, raw, { dataDir: join(dir, 'data'), configFile });
// Its public URL is itself (loopback): the Status page shows the tunnel check reaching this instance.
raw.server.public_url = gw.url;
writeFileSync(configFile, `# The console's screenshot gateway.\n${stringify(raw)}`);
gw.holder.replace(testConfig(raw, join(dir, 'data')));

const chat = (model: string, extra: Record<string, unknown> = {}) =>
  fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }], ...extra }) });
for (let i = 0; i < 3; i++) await (await chat('fake/gpt-4o')).text();
for (let i = 0; i < 4; i++) await (await chat(i % 2 ? 'demo/echo-mini' : 'demo/echo-1', { stream: i % 2 === 1 })).text();
fake.next({ kind: 'error', status: 500, body: { error: { message: 'upstream fell over', type: 'server_error' } } });
await (await chat('smart')).text();
fake.next({ kind: 'error', status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } });
await (await chat('fake/gpt-4o')).text();
await gw.flush();
// The daily budget is crossed and the quota is past 80 %: the alert evaluator fires; wait until the inbox has them.
const until = Date.now() + 10_000;
while (Date.now() < until) {
  const { alerts } = (await (await fetch(`${gw.url}/api/alerts`)).json()) as { alerts: unknown[] };
  if (alerts.length >= 2) break;
  await new Promise((r) => setTimeout(r, 200));
}

const browser = await launchBrowser(t);
const shots = screenshotDir();

for (const colorScheme of ['light', 'dark'] as const) {
  for (const [width, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
    t.test(`${colorScheme}, ${width} (${viewport.width} px)`, async (t) => {
      const { page, context, requests, errors } = await openPage(browser, { viewport, colorScheme });
      t.teardown(() => context.close());
      await page.goto(`${gw.url}/#/activity`);
      await page.locator('h1.page-title').waitFor();
      await page.keyboard.press('Tab');
      t.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content', 'the first Tab reaches the skip link');
      await page.keyboard.press('Tab');
      t.equal(await page.evaluate('document.activeElement.textContent'), 'Tollgate', 'then the header');
      for (const id of PAGES) {
        await page.goto(`${gw.url}/#/${id}`);
        await page.locator('h1.page-title').filter({ hasText: new RegExp(id, 'i') }).waitFor();
        await waitForCount(page, '[aria-busy=true]', 0);
        if (id === 'activity') {
          await page.locator('tr.log-row').first().waitFor();
          const expand = page.getByRole('button', { name: /attempts of combo smart/ });
          await expand.click();
          t.equal(await page.locator('tr.attempt-row').count(), 2, 'the combo folds its two attempts');
        }
        if (id === 'quota') t.match(await page.locator('.countdown').first().innerText(), /\d+ (h|min)/, 'a countdown to the reset');
        if (id === 'alerts') await page.locator('.inbox li').first().waitFor();
        if (id === 'cost') await page.locator('.chart canvas').first().waitFor();
        if (id === 'status') {
          await page.getByText('Reaches this instance', { exact: true }).waitFor();
          await page.getByText('matches what runs', { exact: true }).waitFor();
        }
        await page.waitForTimeout(150);
        t.same(await unlabelledControls(page), [], `${id}: every control has a label`);
        const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
        t.equal(overflow, 0, `${id}: nothing wider than the window`);
        await page.screenshot({ path: join(shots, `${id}-${colorScheme}-${width}.png`), fullPage: true });
      }
      const origin = new URL(gw.url).origin;
      t.same(requests.filter((u) => new URL(u).origin !== origin), [], 'no request left the origin');
      t.same(errors, [], 'no console errors');
    });
  }
}

t.test('settings: a config file that cannot be edited is named as such, not as no file at all', async (t) => {
  const good = `# The console's screenshot gateway.\n${stringify(raw)}`;
  // A hand edit that is not clean YAML (a key twice): the running settings stay, and no write can be made.
  writeFileSync(configFile, `${good}server:\n  port: 1\n`);
  t.teardown(() => writeFileSync(configFile, good));
  const { page, context } = await openPage(browser, { viewport: DESKTOP, colorScheme: 'light' });
  t.teardown(() => context.close());
  await page.goto(`${gw.url}/#/settings`);
  const note = page.getByRole('alert').filter({ hasText: 'The config file cannot be edited' });
  await note.waitFor();
  t.match(await note.innerText(), /cannot be edited: .+\. Settings are shown, not saved; fix the file by hand\./);
  t.equal(await page.getByText('runs without a config file').count(), 0, 'not told it has no file');
});
