// From a review of the reconnect fix: a `tollgate connect` saved while the gateway's refresh of the OLD grant was on
// its way (a slow token endpoint) was overwritten when that refresh came back: the file was read before the refresh,
// not after. Now the refreshed tokens are dropped when the file holds tokens obtained after the ones refreshed. The
// token endpoint holds its answer until the test has saved the reconnect (no timing).
import t from 'tap';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { OAuthSession } from '../../src/providers/oauth.js';
import { CredentialStore } from '../../src/providers/credentials.js';
import { tempDir } from '../helpers/tmp.js';

for (const [label, reconnectLife] of [['a fresh reconnect', 3_600_000], ['a reconnect whose token itself expires within the refresh margin', 30_000]] as const) {
t.test(`${label} saved while the old grant's refresh is on its way wins over that refresh`, async (t) => {
  let release!: () => void;
  const reconnected = new Promise<void>((r) => (release = r));
  let asked!: () => void;
  const refreshAsked = new Promise<void>((r) => (asked = r));
  const refreshed: string[] = [];
  const srv = createServer(async (req, res) => {
    let b = '';
    for await (const c of req) b += String(c);
    const rt = new URLSearchParams(b).get('refresh_token') ?? '';
    refreshed.push(rt);
    asked();
    await reconnected;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: `AT-from-${rt}`, refresh_token: `RT-from-${rt}`, expires_in: 3600 }));
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  t.teardown(() => srv.close());
  const store = new CredentialStore(tempDir(t), {});
  const now = Date.now();
  // the held token expires within the refresh margin: the next accessToken() refreshes it
  await store.save('acme', { access_token: 'AT-OLD', refresh_token: 'RT-OLD', token_type: 'Bearer', expires_at: now + 30_000, obtained_at: now - 3_570_000 });
  const session = new OAuthSession('acme', { token_url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/token`, client_id: 'c' } as never, store);
  const first = session.accessToken();
  await refreshAsked; // the old grant's refresh is at the token endpoint
  await store.save('acme', { access_token: 'AT-NEW', refresh_token: 'RT-NEW', token_type: 'Bearer', expires_at: Date.now() + reconnectLife, obtained_at: Date.now() });
  release();
  await first;
  // let a refresh still on its way come back
  for (let i = 0; i < 50 && (await store.load('acme'))?.access_token !== 'AT-NEW'; i++) await new Promise((r) => setImmediate(r));
  t.same(refreshed, ['RT-OLD'], 'the old grant was refreshed once');
  t.equal((await store.load('acme'))?.access_token, 'AT-NEW', 'the file keeps the reconnect\'s tokens');
  t.equal((await store.load('acme'))?.refresh_token, 'RT-NEW');
  // later requests use the reconnect's grant: its token, or (about to expire) its own refresh, never the old grant
  t.match(await session.accessToken(), /^(AT-NEW|AT-from-RT-NEW)$/, 'later requests use the reconnect\'s grant');
  t.equal(refreshed.filter((rt) => rt === 'RT-OLD').length, 1, 'the old grant was never refreshed again');
});
}
