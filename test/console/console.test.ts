// The console in a real Chromium, against a real gateway with keys and a config file: sign in, a request made with
// the openai SDK in the activity view, a slow stream in the Live region while it runs, the daily budget changed in
// settings (config.yaml rewritten with its comments, /api/budgets updated), an invalid price refused with the file
// untouched. Every request the page makes stays on the gateway's origin; no console error but the refusals the test
// provokes (a 401 before sign-in, the 400 of the invalid price).

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { parse } from 'yaml';
import { startApp } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage, screenshotDir, waitForCount, PHONE } from '../helpers/browser.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'console-test-admin-key-0123456789abcdef';

buildConsole();
const dir = tempDir(t);
const fake = await startFakeOpenAI(t);
const configFile = join(dir, 'config.yaml');
const CONFIG_TEXT = `# Tollgate for the console test.
server:
  host: 127.0.0.1
  api_keys:
    - { name: admin, key: "${KEY}" }   # the console signs in with this

storage:
  data_dir: ${join(dir, 'data')}
  batch: { flush_ms: 50 }

providers:
  fake:
    name: Fake OpenAI
    group: paid
    format: openai
    base_url: ${fake.baseUrl}
    auth: { type: api_key, key: "\${FAKE_UPSTREAM_KEY}" }   # from the environment
    price: { input: 2.5, output: 10, cached: 1.25 }   # USD per 1M tokens
    timeouts: { connect_s: 2, stall_s: 2 }
    models:
      gpt-4o: { kind: llm }

budgets:
  # Spend limits in USD; the console's settings page edits these lines.
  monthly_usd: 100   # a month's ceiling
  timezone: UTC
`;
writeFileSync(configFile, CONFIG_TEXT);
process.env.FAKE_UPSTREAM_KEY = 'sk-upstream-secret-123';
const gw = await startApp(t, parse(CONFIG_TEXT.replace('${FAKE_UPSTREAM_KEY}', process.env.FAKE_UPSTREAM_KEY)) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile });
const browser = await launchBrowser(t);
const { page, requests, errors } = await openPage(browser);
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 });
const shots = screenshotDir();

t.test('sign in: the key is asked for, refused when wrong, kept in sessionStorage only', async (t) => {
  await page.goto(`${gw.url}/`);
  const field = page.getByLabel('API key');
  await field.waitFor();
  await page.screenshot({ path: join(shots, 'sign-in-light-desktop.png') });
  await field.fill('not-the-key-but-long-enough');
  await page.keyboard.press('Enter');
  await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
  await field.fill(KEY);
  await page.keyboard.press('Enter');
  await page.getByRole('region', { name: 'Live' }).waitFor();
  t.equal(await page.evaluate('sessionStorage.getItem("tollgate.api_key")'), KEY, 'the key is in sessionStorage');
  t.equal(await page.evaluate('localStorage.length'), 0, 'nothing in localStorage');
  t.same((await page.context().cookies()).length, 0, 'no cookie');
  t.notOk(requests.some((u) => u.includes(KEY)), 'the key is never in a URL');
});

t.test('a request made with the openai SDK appears in the activity view with its tokens and cost', async (t) => {
  const done = await client.chat.completions.create({ model: 'fake/gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
  t.equal(done.usage?.total_tokens, 18);
  // The row: 8 uncached input + 3 cached + 5 output + 2 reasoning; 8 x 2.5 + 3 x 1.25 + 7 x 10 per 1M = $0.00009375.
  const row = page.locator('tr.log-row').filter({ hasText: 'fake/gpt-4o' }).first();
  await row.waitFor({ timeout: 10_000 });
  const cells = (await row.locator('td').allInnerTexts()).map((s) => s.trim());
  t.same(cells.slice(2, 9), ['fake/gpt-4o', '8', '7', '18', '3', '$0.000094', cells[8]!], 'model, input, output, total, cached, cost');
  t.match(cells[9], /success/);
  await row.getByRole('button', { name: /Details of request/ }).click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  const text = await dialog.innerText();
  t.match(text, /Usage source\s+reported/);
  t.match(text, /upstream HTTP 200/);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
});

t.test('a slow stream is in the Live region while it runs and gone after', async (t) => {
  fake.next({ kind: 'ok', words: Array.from({ length: 16 }, (_, i) => ` w${i}`), chunkDelayMs: 150 });
  const live = page.getByRole('region', { name: 'Live' });
  const stream = client.chat.completions.create({ model: 'fake/gpt-4o', stream: true, max_tokens: 256, messages: [{ role: 'user', content: 'count slowly' }] });
  const item = live.locator('.live-item').filter({ hasText: 'fake/gpt-4o' });
  await item.waitFor({ timeout: 5000 });
  t.match(await item.innerText(), /stream/, 'shown as a stream while it runs');
  await item.filter({ hasText: /tokens [1-9]/ }).waitFor({ timeout: 3000 });
  t.match(await item.innerText(), /tokens [1-9]\d* \/ ~256/, 'tokens streamed against the request\'s max tokens');
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: join(shots, 'live-light-phone.png') });
  await page.setViewportSize({ width: 1280, height: 860 });
  let chunks = 0;
  for await (const _ of await stream) chunks++;
  t.ok(chunks >= 16, 'the stream ran to its end');
  await item.waitFor({ state: 'detached', timeout: 5000 });
  t.equal(await live.locator('.live-item').count(), 0, 'nothing left in flight');
  // Its final row arrives in the activity view (two rows for fake/gpt-4o now: the stream and the first request).
  await waitForCount(page, 'tr.log-row', 2);
});

t.test('the daily budget changed in settings: config.yaml keeps its comments, /api/budgets has it', async (t) => {
  await page.getByRole('link', { name: 'Settings' }).click();
  const daily = page.getByLabel('Daily budget', { exact: true });
  await daily.waitFor();
  t.equal(await page.getByLabel('Monthly budget', { exact: true }).inputValue(), '100');
  await daily.fill('12.5');
  await daily.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  const text = readFileSync(configFile, 'utf8');
  t.match(text, /daily_usd: 12\.5/);
  for (const comment of ['# Tollgate for the console test.', '# the console signs in with this', '# Spend limits in USD; the console', '# a month\'s ceiling', '# from the environment']) {
    t.ok(text.includes(comment), `comment kept: ${comment}`);
  }
  t.ok(text.includes('key: "${FAKE_UPSTREAM_KEY}"'), 'the ${VAR} reference is kept');
  const budgets = (await (await fetch(`${gw.url}/api/budgets`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { daily: { limit: number } };
  t.equal(budgets.daily.limit, 12.5, '/api/budgets runs with the new budget');
  t.equal(gw.holder.current.budgets.daily_usd, 12.5);
});

t.test('an invalid price is refused with the field named, and the file is untouched', async (t) => {
  const before = readFileSync(configFile, 'utf8');
  const input = page.getByLabel('Input price', { exact: true });
  await input.fill('-1');
  await input.press('Enter');
  const alert = page.getByRole('alert').filter({ hasText: 'providers.fake.price.input' });
  await alert.waitFor();
  t.match(await alert.innerText(), /providers\.fake\.price\.input: .*>= 0/);
  t.equal(readFileSync(configFile, 'utf8'), before, 'config.yaml unchanged');
  t.equal(gw.holder.current.providers.fake!.price!.input, 2.5);
});

t.test('the theme button cycles system, light, dark for the tab; the pages are reached by keyboard', async (t) => {
  const html = page.locator('html');
  t.equal(await html.getAttribute('data-theme'), null, 'system at first');
  await page.getByRole('button', { name: 'Theme: system. Switch to light' }).click();
  t.equal(await html.getAttribute('data-theme'), 'light');
  await page.getByRole('button', { name: 'Theme: light. Switch to dark' }).click();
  t.equal(await html.getAttribute('data-theme'), 'dark');
  t.equal(await page.evaluate('sessionStorage.getItem("tollgate.theme")'), 'dark');
  await page.getByRole('button', { name: 'Theme: dark. Switch to system' }).click();
  t.equal(await html.getAttribute('data-theme'), null, 'back to the system\'s');
  await page.getByRole('link', { name: 'Quota', exact: true }).focus();
  await page.keyboard.press('Enter');
  await page.locator('h1.page-title').filter({ hasText: 'Quota' }).waitFor();
  t.equal(await page.getByRole('link', { name: 'Quota', exact: true }).getAttribute('aria-current'), 'page');
});

t.test('sign out forgets the key', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  t.equal(await page.evaluate('sessionStorage.getItem("tollgate.api_key")'), null);
});

t.test('every request stayed on the origin; no console error but the refusals provoked', async (t) => {
  const origin = new URL(gw.url).origin;
  t.same(requests.filter((u) => new URL(u).origin !== origin), [], 'no request left the origin');
  t.ok(requests.length > 5);
  const unexpected = errors.filter((e) => !/^Failed to load resource: the server responded with a status of (400|401)\b/.test(e));
  t.same(unexpected, [], 'no console errors');
});
