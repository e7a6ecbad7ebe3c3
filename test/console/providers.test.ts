// The console's Providers page in a real Chromium: a paid provider priced in the YAML, a catalog-priced model, a paid
// model priced nowhere, and an OAuth provider with flow pkce signed in to against the fake authorization server
// (loopback). The page shows the three price sources and the unknown-price flag, the computed quota beside the
// reported one; Connect yields the authorization URL, the test plays the user's browser at the authorization server,
// pastes the address it was sent back to, and the gateway then holds a token that works upstream. Every request the
// page made stayed on its origin, with no console error; screenshots (light/dark, 1280/390 px) go to docs/console/.

import t, { type Test } from 'tap';
import { join } from 'node:path';
import { startApp } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage, screenshotDir, unlabelledControls, waitForCount, DESKTOP, PHONE, type WatchedPage } from '../helpers/browser.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { startFakeAuthorizationServer } from '../helpers/fake-authorization-server.js';
import { CredentialStore } from '../../src/providers/credentials.js';
import { CATALOG_SOURCE } from '../../src/config/catalog-prices.js';
import { tempDir } from '../helpers/tmp.js';

buildConsole();
const dir = tempDir(t);
const dataDir = join(dir, 'data');
const up = await startFakeOpenAI(t);
// The console sends the browser back to itself (`/`): registered as a loopback redirect, any port (RFC 8252 §7.3).
const as = await startFakeAuthorizationServer(t, { redirectUris: ['http://127.0.0.1/'] });
const { name: _n, price: _p, models: _m, ...openaiBase } = fakeProvider(up.baseUrl);
const gw = await startApp(t, {
  server: { host: '127.0.0.1' },
  providers: {
    priced: fakeProvider(up.baseUrl, { name: 'Priced in YAML', models: { 'gpt-4o': { kind: 'llm' } }, quota: { kind: 'daily_tokens', limit: 1000, reset_time: '00:00Z' } }),
    openai: { ...openaiBase, name: 'OpenAI (catalog)', models: { 'gpt-4o': { kind: 'llm' }, mystery: { kind: 'llm' } } },
    acme: { name: 'Acme (PKCE)', group: 'subscription', format: 'openai', base_url: up.baseUrl, auth: { type: 'oauth', oauth: as.settings() }, models: { 'acme-1': { kind: 'llm' } } },
  },
}, { dataDir });
const origin = new URL(gw.url).origin;

const chat = async (model: string) => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
  await res.text();
  return res.status;
};
// The provider reports its rate limits on its responses (docs/quota.md): shown beside the computed quota.
up.setResponseHeaders({
  'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-requests': '6m0s',
  'x-ratelimit-limit-tokens': '30000', 'x-ratelimit-remaining-tokens': '29982', 'x-ratelimit-reset-tokens': '12s',
});
const firstStatus = await chat('priced/gpt-4o');
await gw.flush();

const browser = await launchBrowser(t);

async function providersPage(w: WatchedPage, path = '/#/providers') {
  await w.page.goto(`${gw.url}${path}`);
  await w.page.locator('h1.page-title').filter({ hasText: 'Providers' }).waitFor();
  await waitForCount(w.page, '[aria-busy=true]', 0);
  await w.page.locator('article[data-provider=acme]').waitFor();
}

/** `expected`: console errors the test caused on purpose (Chromium logs a 4xx answer to a fetch). */
const clean = (t: Test, w: WatchedPage, expected: string[] = []) => {
  t.same(w.requests.filter((u) => new URL(u).origin !== origin), [], 'every request the page made stayed on the origin');
  t.same(w.errors, expected, expected.length === 0 ? 'no console errors' : 'no console errors but the refusal the test asked for');
};

t.test('prices with their sources, the unknown-price flag, computed beside reported quota', async (t) => {
  t.equal(firstStatus, 200, 'a request to the YAML-priced provider went through');
  const w = await openPage(browser);
  t.teardown(() => w.context.close());
  await providersPage(w);
  const { page } = w;
  const row = (provider: string, model: string) => page.locator(`article[data-provider=${provider}] tr[data-model="${model}"]`);
  t.same(await row('priced', 'gpt-4o').locator('td').allInnerTexts(), ['gpt-4o', '$2.5', '$10', '$1.25 / –', 'config'], 'a YAML price: source config');
  t.same(await row('openai', 'gpt-4o').locator('td').last().innerText(), CATALOG_SOURCE, 'a catalog price says catalog@<version>');
  t.match(await row('openai', 'gpt-4o').locator('td').nth(1).innerText(), /^\$\d/, 'with the catalog\'s input price');
  t.match(await row('openai', 'mystery').innerText(), /none/, 'a model priced nowhere: source none');
  t.match(await page.locator('article[data-provider=openai] [data-unpriced=mystery]').innerText(), /price unknown: mystery is paid and its cost is recorded as unknown/, 'and flagged, being paid');
  t.equal(await page.locator('article[data-provider=acme] [data-unpriced]').count(), 0, 'a subscription model is not flagged');
  t.match(await page.locator('article[data-provider=openai]').innerText(), /1 paid model without a price/);
  await page.locator('article[data-provider=priced] .quota-pair').waitFor();
  const priced = await page.locator('article[data-provider=priced]').innerText();
  t.match(priced, /Computed \(from the ledger\)/);
  t.match(priced, /of 1,000 tokens/, 'the computed quota');
  t.match(priced, /requests\s+499 of 500 left/, 'the reported figures');
  t.match(priced, /Connection default: headers, \d+ s ago/, 'with their source and age');
  t.same(await unlabelledControls(page), [], 'every control has a label');
  // The Quota page carries the flag too.
  await page.goto(`${gw.url}/#/quota`);
  await page.locator('article.quota .unpriced').first().waitFor();
  t.match(await page.locator('article.quota .unpriced').innerText(), /price unknown: openai\/mystery/);
  clean(t, w);
});

t.test('Connect, sign in at the authorization server, paste the callback: connected, and the token works', async (t) => {
  const w = await openPage(browser);
  t.teardown(() => w.context.close());
  await providersPage(w);
  const { page } = w;
  const card = page.locator('article[data-provider=acme]');
  t.equal(await card.locator('.token-state').innerText(), 'not signed in');
  const field = card.getByLabel('Authorization code or callback URL');
  // A callback nobody started is refused with the API's message.
  await field.fill(`${gw.url}/?code=made-up&state=forged`);
  await field.press('Enter');
  t.match(await card.getByRole('alert').innerText(), /no sign-in in progress with this state/, 'the API\'s error message');
  // Keyboard: the Connect button takes focus and Enter activates it.
  const connect = card.getByRole('button', { name: 'Connect Acme (PKCE)' });
  await connect.focus();
  await page.keyboard.press('Enter');
  const link = card.getByRole('link', { name: /sign-in page of Acme/ });
  await link.waitFor();
  t.equal(await link.getAttribute('target'), '_blank', 'opened in a new tab, by the user');
  const authorizationUrl = String(await link.getAttribute('href'));
  const url = new URL(authorizationUrl);
  t.equal(url.origin, new URL(as.authorizationUrl).origin, 'the authorization server\'s address');
  t.equal(url.searchParams.get('redirect_uri'), `${origin}/`, 'which sends the browser back to the console');
  t.equal(url.searchParams.get('code_challenge_method'), 'S256');
  // The user's browser: follow the authorization URL to the redirect with code and state.
  const callback = await as.authorize(authorizationUrl);
  t.match(callback, new RegExp(`^${origin}/\\?code=`));
  await field.fill(callback);
  await card.getByRole('button', { name: 'Complete sign-in' }).click();
  const status = card.getByRole('status');
  await status.waitFor();
  t.match(await status.innerText(), /^Connected: Acme \(PKCE\) has a token until .*, refreshed before it expires\.$/);
  await card.locator('.token-state').filter({ hasText: 'token stored' }).waitFor();
  // The gateway holds a valid token, and it is what the provider now receives.
  const tokens = await new CredentialStore(dataDir).load('acme');
  t.ok(tokens && as.isValidAccessToken(tokens.access_token), 'the credentials store has a token the authorization server issued');
  t.equal(await chat('acme/acme-1'), 200, 'a request to the provider succeeds');
  t.equal(up.received.at(-1)?.headers.authorization, `Bearer ${tokens!.access_token}`, 'with that token');
  t.same(as.authorizations.length, 1, 'the page itself never called the authorization server');
  clean(t, w, ['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
});

t.test('the browser sent back to the console: the Providers page takes the callback', async (t) => {
  const w = await openPage(browser);
  t.teardown(() => w.context.close());
  await providersPage(w);
  const card = w.page.locator('article[data-provider=acme]');
  await card.getByRole('button', { name: 'Connect Acme (PKCE)' }).click();
  const href = String(await card.getByRole('link', { name: /sign-in page of Acme/ }).getAttribute('href'));
  const callback = await as.authorize(href);
  await providersPage(w, callback.slice(origin.length)); // the redirect lands on `/?code=…&state=…`
  t.equal(w.page.url(), `${origin}/#/providers`, 'the code left the address bar as the console loaded');
  // Another page and back through the console's own links (each a history entry, the query kept by a hash change):
  // before, every entry pushed before the exchange kept the code.
  const nav = w.page.getByRole('navigation', { name: 'Pages' });
  await nav.getByRole('link', { name: 'Activity' }).click();
  await w.page.locator('h1.page-title').filter({ hasText: 'Activity' }).waitFor();
  await nav.getByRole('link', { name: 'Providers' }).click();
  await w.page.locator('h1.page-title').filter({ hasText: 'Providers' }).waitFor();
  const field = w.page.locator('article[data-provider=acme]').getByLabel('Authorization code or callback URL');
  t.equal(await field.inputValue(), callback, 'the address is already in the field');
  await field.press('Enter');
  await w.page.locator('article[data-provider=acme]').getByRole('status').waitFor();
  t.equal(as.grants.filter((g) => g.grant_type === 'authorization_code' && g.answer === 'issued').length, 2, 'a second code exchanged');
  t.equal(w.page.url(), `${origin}/#/providers`, 'the used code is gone from the address bar');
  const entries: string[] = [w.page.url()];
  for (let i = 0; i < 2; i++) {
    await w.page.evaluate("new Promise((r) => { addEventListener('hashchange', r, { once: true }); history.back(); })");
    entries.push(w.page.url());
  }
  t.same(entries, [`${origin}/#/providers`, `${origin}/#/activity`, `${origin}/#/providers`], 'the entries since the landing, newest first');
  t.notMatch(entries.join(' '), /code=/, 'no history entry keeps the code');
  clean(t, w);
});

const shots = screenshotDir();
for (const colorScheme of ['light', 'dark'] as const) {
  for (const [width, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
    t.test(`screenshot: ${colorScheme}, ${width} (${viewport.width} px)`, async (t) => {
      const w = await openPage(browser, { viewport, colorScheme });
      t.teardown(() => w.context.close());
      await providersPage(w);
      await w.page.locator('article[data-provider=priced] .quota-pair').waitFor();
      await w.page.waitForTimeout(150);
      t.same(await unlabelledControls(w.page), [], 'every control has a label');
      t.equal(await w.page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, 'nothing wider than the window');
      await w.page.screenshot({ path: join(shots, `providers-${colorScheme}-${width}.png`), fullPage: true });
      clean(t, w);
    });
  }
}
