// A model id with a right-to-left override (U+202E, "Trojan Source") cannot spoof the console: in the Activity table
// and the Live row the id sits in a <bdi> (computed unicode-bidi: isolate) and the override is shown as a marker, not
// applied, so `fake/<U+202E>gnp.exe` never reads `fake/exe.png`; the tag after it ("stream", the combo) stays after it.

import t from 'tap';
import { join } from 'node:path';
import type { Locator } from 'playwright-core';
import { startApp } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage } from '../helpers/browser.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';

const SPOOF = 'fake/\u202Egnp.exe';

buildConsole();
const dir = tempDir(t);
const fake = await startFakeOpenAI(t);
const gw = await startApp(t, {
  server: { host: '127.0.0.1' }, storage: { batch: { flush_ms: 50 } },
  providers: { fake: fakeProvider(fake.baseUrl, { allow_unlisted_models: true, timeouts: { connect_s: 2, stall_s: 60 } }) },
  combos: { smart: { strategy: 'fallback', models: [SPOOF] } },
}, { dataDir: join(dir, 'data') });
const browser = await launchBrowser(t);

const chat = (model: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });

// The page's DOM as far as these checks read it (the test files are compiled without the DOM types).
interface Rect { left: number; right: number }
interface El { firstChild: unknown; getBoundingClientRect(): Rect; querySelector(s: string): El | null }
interface Doc { createRange(): { setStartBefore(n: unknown): void; setEndBefore(n: unknown): void; getBoundingClientRect(): Rect } }

/**
 * Whether the tag in `cell` is drawn after all the text before it in the DOM: an override in the id that leaks past
 * it draws the tag in the middle of (or before) the id's text.
 */
const tagFollows = (cell: Locator, tag: string) => cell.evaluate((el, sel) => {
  const e = el as unknown as El;
  const t = e.querySelector(sel)!;
  const before = (globalThis as unknown as { document: Doc }).document.createRange();
  before.setStartBefore(e.firstChild);
  before.setEndBefore(t);
  const text = before.getBoundingClientRect();
  const drawn = t.getBoundingClientRect();
  return { follows: drawn.left >= text.right - 1, tagLeft: drawn.left, textRight: text.right };
}, tag);
/** The computed `unicode-bidi` of the first element `l` finds ('none found' when there is none). */
const unicodeBidi = async (l: Locator): Promise<string> => ((await l.count()) === 0 ? 'none found'
  : l.first().evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { unicodeBidi: string } }).getComputedStyle(el).unicodeBidi));
const textOf = async (l: Locator): Promise<string | null> => ((await l.count()) === 0 ? null : l.first().textContent());

t.before(async () => {
  for (const model of [SPOOF, 'smart']) {
    const r = await chat(model);
    await r.text();
    if (r.status !== 200) throw new Error(`${model}: ${r.status}`);
  }
  await gw.flush();
});

t.test('the Activity table: the id isolated, the override shown, the combo tag after it', async (t) => {
  const { page, context } = await openPage(browser);
  t.teardown(() => context.close());
  page.setDefaultTimeout(5000);
  await page.goto(`${gw.url}/#/activity`);
  await page.locator('tr.log-row').nth(1).waitFor();
  const combo = page.locator('tr.log-row').filter({ has: page.locator('.tag') }).locator('td.model-cell');
  const placed = await tagFollows(combo, '.tag');
  t.ok(placed.follows, `the combo tag follows the id (${JSON.stringify(placed)})`);
  t.equal(await unicodeBidi(combo.locator('.tag bdi')), 'isolate', 'the combo name is isolated too');
  const direct = page.locator('tr.log-row').filter({ hasNot: page.locator('.tag') }).locator('td.model-cell');
  const name = direct.locator('bdi');
  t.equal(await unicodeBidi(name), 'isolate', 'the id is in an isolate');
  t.equal(await textOf(name), 'fake/⟨U+202E⟩gnp.exe', 'the override is shown, not applied');
  t.notOk((await direct.textContent())?.includes('\u202E'), 'no override character reaches the page');
});

t.test('the Live row: the id isolated, the "stream" tag after it', async (t) => {
  const ctl = new AbortController();
  t.teardown(() => ctl.abort());
  fake.next({ kind: 'stall', chunks: 2 });
  void chat(SPOOF, { stream: true }, ctl.signal).then((r) => r.text()).catch(() => {});
  const { page, context } = await openPage(browser);
  t.teardown(() => context.close());
  page.setDefaultTimeout(5000);
  await page.goto(`${gw.url}/#/activity`);
  const item = page.locator('.live-item').first();
  await item.waitFor({ timeout: 10_000 });
  const placed = await tagFollows(item.locator('.live-model'), '.tag:last-child');
  t.ok(placed.follows, `the "stream" tag follows the id (${JSON.stringify(placed)})`);
  const name = item.locator('.live-model bdi');
  t.equal(await unicodeBidi(name), 'isolate', 'the id is in an isolate');
  t.equal(await textOf(name), 'fake/⟨U+202E⟩gnp.exe', 'the override is shown, not applied');
});
