// A real Chromium (Debian's, /usr/bin/chromium; CHROMIUM_PATH overrides) driven by playwright-core, for the console's
// browser tests: one browser per test file, closed at teardown. Every page records each request it makes and every
// console error and uncaught exception, so a test can assert that nothing left the origin and nothing failed.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Teardown } from './tmp.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = new URL('../../', import.meta.url).pathname;

/** The newest modification time of the files under `dir`. */
function newest(dir: string): number {
  let latest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) latest = Math.max(latest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return latest;
}

/**
 * Bundles the console into dist/console (scripts/build-console.mjs) when its sources are newer than the bundle, as
 * `npm run build` does. Under `npm test` the bundle is fresh (pretest built it), so test files running side by side
 * never rebuild it under each other's feet.
 */
export function buildConsole(): void {
  const bundle = join(ROOT, 'dist', 'console', 'app.js');
  const built = statSync(bundle, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (built >= newest(join(ROOT, 'console'))) return;
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-console.mjs')], { stdio: 'inherit' });
}

export async function launchBrowser(t: Teardown): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  t.teardown(() => browser.close());
  return browser;
}

export interface WatchedPage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Every URL the page requested (documents, scripts, styles, fetches, icons). */
  readonly requests: string[];
  /** Console messages of type error, and uncaught exceptions. */
  readonly errors: string[];
}

export const DESKTOP = { width: 1280, height: 860 } as const;
export const PHONE = { width: 390, height: 844 } as const;

export async function openPage(browser: Browser, opts: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: opts.viewport ?? DESKTOP, colorScheme: opts.colorScheme ?? 'light', deviceScaleFactor: 1 });
  const page = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  return { page, context, requests, errors };
}

/** docs/console/, where the tests write the screenshots docs/console.md shows. */
export function screenshotDir(): string {
  const dir = join(ROOT, 'docs', 'console');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The document as far as these tests read it (the test files are compiled without the DOM types). */
interface Doc {
  querySelectorAll(selector: string): { length: number };
}

/**
 * Wait until `selector` matches at least `count` elements (0: none). A function, not a string: the console's CSP
 * has no 'unsafe-eval', which a string predicate would need.
 */
export async function waitForCount(page: Page, selector: string, count: number, timeout = 10_000): Promise<void> {
  await page.waitForFunction(
    ([sel, n]) => {
      const found = (globalThis as unknown as { document: Doc }).document.querySelectorAll(sel as string).length;
      return n === 0 ? found === 0 : found >= (n as number);
    },
    [selector, count] as const,
    { timeout },
  );
}

interface Control {
  readonly tagName: string;
  readonly labels?: { length: number } | null;
  readonly textContent: string | null;
  readonly outerHTML: string;
  getAttribute(name: string): string | null;
}

/** Form controls and buttons of the page that have no accessible name (no label, no text, no aria-label). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<Control> } }).document;
    return [...doc.querySelectorAll('input, select, textarea, button')]
      .filter((el) => {
        if (el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')) return false;
        if (el.tagName === 'BUTTON') return (el.textContent ?? '').trim() === '';
        return (el.labels?.length ?? 0) === 0;
      })
      .map((el) => el.outerHTML.slice(0, 120));
  });
}
