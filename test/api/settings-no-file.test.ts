// An app built without a config file (by code, as tests and embedders do): its settings are shown, not written.

import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';

const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER } });

t.test('GET answers the settings; a PUT is a 409 that says why', async (t) => {
  const get = await fetch(`${gw.url}/api/settings`);
  t.equal(get.status, 200);
  t.equal(get.headers.get('etag'), null, 'no file, no ETag');
  t.match(await get.json(), { writable: false, file: null, etag: null, env_fed: [], budgets: { daily_usd: null } });
  const put = await fetch(`${gw.url}/api/settings/budgets`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"daily_usd":1}' });
  t.equal(put.status, 409);
  t.match(await put.json(), { error: { code: 'TOLLGATE_ERR_CONFIG_CONFLICT', message: /without a config file/ } });
  const version = (await (await fetch(`${gw.url}/api/version`)).json()) as { config: unknown };
  t.equal(version.config, null, '/api/version: no file to compare');
});
