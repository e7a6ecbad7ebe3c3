// A request whose cost is unknown (a paid provider priced by the catalog with allow_unlisted_models, asked for an id
// the catalog does not know: price_source 'none', docs/catalog.md) reads "unknown" in the Activity table and in its
// details, never the placeholder "$0.00"; a priced request beside it keeps its price.

import t from 'tap';
import { join } from 'node:path';
import { startApp } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage } from '../helpers/browser.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';

buildConsole();
const dir = tempDir(t);
const fake = await startFakeOpenAI(t);
const paid = fakeProvider(fake.baseUrl, { catalog: 'openai', allow_unlisted_models: true, models: { 'gpt-4o': { kind: 'llm' } } });
delete paid.price;
const gw = await startApp(t, { server: { host: '127.0.0.1' }, storage: { batch: { flush_ms: 50 } }, providers: { fake: paid } }, { dataDir: join(dir, 'data') });
const browser = await launchBrowser(t);

const chat = async (model: string): Promise<number> => {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await r.text();
  return r.status;
};

t.before(async () => {
  fake.next({ kind: 'ok', usage: { prompt_tokens: 2_000_000, completion_tokens: 1_000_000 } });
  const priced = await chat('fake/gpt-4o');
  fake.next({ kind: 'ok', usage: { prompt_tokens: 2_000_000, completion_tokens: 1_000_000 } });
  const unpriced = await chat('fake/gpt-4o-unlisted-alias');
  if (priced !== 200 || unpriced !== 200) throw new Error(`unexpected statuses ${priced} ${unpriced}`);
  await gw.flush();
});

t.test('the Activity table and the details say "unknown", not $0.00', async (t) => {
  const { page, context, errors } = await openPage(browser);
  t.teardown(() => context.close());
  page.setDefaultTimeout(5000);
  await page.goto(`${gw.url}/#/activity`);
  await page.locator('tr.log-row').nth(1).waitFor();
  const row = (model: string) => page.locator('tr.log-row').filter({ hasText: model }).filter({ hasNotText: `${model}-` });

  const costOf = (model: string) => row(model).locator('td').nth(7); // the Cost column
  t.equal(await page.locator('table.log th').nth(7).textContent(), 'Cost');
  const unknownCell = costOf('fake/gpt-4o-unlisted-alias');
  t.equal((await unknownCell.textContent())?.trim(), 'unknown', 'the table\'s cost cell');
  t.match(await unknownCell.locator('[title]').first().getAttribute('title').catch(() => null), /no price covers this paid model/i, 'a title says why');
  t.equal((await costOf('fake/gpt-4o').textContent())?.trim(), '$15.00', 'a priced row keeps its price');

  await row('fake/gpt-4o-unlisted-alias').locator('button.link').click();
  const cost = page.locator('dialog.details dt:text-is("Cost") + dd');
  await cost.waitFor();
  const text = (await cost.textContent()) ?? '';
  t.match(text, /^unknown \(list unknown\)/, `the details: ${text}`);
  t.match(text, /price from none/, 'the price source is named');
  t.notMatch(text, /\$0\.00/, 'no placeholder price');
  await page.keyboard.press('Escape');

  await row('fake/gpt-4o').locator('button.link').click();
  t.match((await page.locator('dialog.details dt:text-is("Cost") + dd').textContent()) ?? '', /^\$15\.00 \(list \$15\.00\) · price from catalog@/, 'a priced request\'s details');
  t.same(errors, [], 'no console error');
});

t.test('the Live region: an unpriced stream in flight reads "unknown" once it has spent tokens, a priced one its cost', async (t) => {
  const { page, context, errors } = await openPage(browser);
  t.teardown(() => context.close());
  page.setDefaultTimeout(5000);
  await page.goto(`${gw.url}/#/activity`);
  const live = page.getByRole('region', { name: 'Live' });
  const slow = { kind: 'ok' as const, words: Array.from({ length: 16 }, (_, i) => ` w${i}`), chunkDelayMs: 150 };
  const stream = async (model: string) => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await r.text();
  };
  for (const [model, want] of [['fake/gpt-4o-unlisted-alias', /cost so far\s*unknown/], ['fake/gpt-4o', /cost so far\s*\$0\.\d+/]] as const) {
    fake.next(slow);
    const done = stream(model);
    const item = live.locator('.live-item').filter({ hasText: model }).filter({ hasText: /tokens [1-9]/ });
    await item.first().waitFor();
    const text = await item.first().innerText();
    t.match(text, want, `${model}: ${text.replace(/\s+/g, ' ')}`);
    await done;
  }
  t.same(errors, [], 'no console error');
});
