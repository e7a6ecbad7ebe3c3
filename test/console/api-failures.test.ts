// Every page when /api/* fails: a 500 with an HTML body (a proxy's error page), a 403 in the gateway's error shape,
// and a 200 whose body is HTML (a proxy's login page). Each page ends its "Loading…" and shows an error
// (role="alert"); an answer that is not JSON says so; the Live region never claims "0 in flight" on a stream it does
// not have.

import t from 'tap';
import { join } from 'node:path';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { buildConsole, launchBrowser, openPage } from '../helpers/browser.js';
import { tempDir } from '../helpers/tmp.js';

const PAGES = ['activity', 'overview', 'cost', 'quota', 'providers', 'alerts', 'settings', 'status'] as const;
const NOT_JSON = 'the gateway answered something that is not JSON: is a proxy in the way?';

buildConsole();
const dir = tempDir(t);
const gw = await startApp(t, { server: { host: '127.0.0.1' }, storage: { batch: { flush_ms: 50 } }, providers: { demo: DEMO_PROVIDER } }, { dataDir: join(dir, 'data') });
const browser = await launchBrowser(t);

const MODES = {
  '500 with an HTML body': { status: 500, contentType: 'text/html', body: '<h1>Bad gateway</h1>', says: /HTTP 500: the gateway answered something that is not JSON/ },
  '403 in the error shape': {
    status: 403, contentType: 'application/json', says: /forbidden by the test/,
    body: JSON.stringify({ error: { code: 'TOLLGATE_ERR_FORBIDDEN', message: 'forbidden by the test', type: 'permission_error', param: null, request_id: null } }),
  },
  // The Live region's stream says "not an event stream" rather than "not JSON".
  '200 with an HTML body (a proxy login page)': {
    status: 200, contentType: 'text/html', body: '<html><body>Sign in to the proxy</body></html>', says: /answered something that is not (JSON|an event stream): is a proxy in the way\?/,
  },
} as const;

for (const [mode, answer] of Object.entries(MODES)) {
  t.test(mode, async (t) => {
    const { page, context } = await openPage(browser);
    t.teardown(() => context.close());
    await page.route(/\/api\//, (route) => route.fulfill({ status: answer.status, contentType: answer.contentType, body: answer.body }));
    for (const id of PAGES) {
      await page.goto(`${gw.url}/#/${id}`);
      await page.locator('h1.page-title').filter({ hasText: new RegExp(id, 'i') }).waitFor();
      // Wait for the page's error; a page that never shows one fails below, not here.
      await page.locator('#main [role=alert]').first().waitFor({ timeout: 5000 }).catch(() => {});
      await page.waitForTimeout(200);
      t.equal(await page.locator('[aria-busy=true]').count(), 0, `${id}: "Loading…" is gone`);
      const alerts = await page.locator('#main [role=alert]').allInnerTexts();
      t.ok(alerts.length > 0, `${id}: an error is shown (${JSON.stringify(alerts)})`);
      t.ok(alerts.every((a) => answer.says.test(a)), `${id}: it says what went wrong`);
      if (answer.status === 200) t.ok(alerts.some((a) => a.includes(NOT_JSON)), `${id}: "${NOT_JSON}"`);
      if (id === 'activity') {
        const live = page.getByRole('region', { name: 'Live' });
        t.notMatch(await live.locator('#live-title + span').innerText(), /in flight/, 'Live does not claim a count it does not have');
        t.notOk(await live.getByText('Nothing in flight.').isVisible(), 'nor that nothing is in flight');
      }
    }
  });
}
