// The console's PKCE sign-in API (api/provider-connect.ts) against the fake authorization server: start returns an
// authorization URL (no verifier), complete exchanges what came back and stores the tokens; a pending sign-in
// completes once; a forged state and a non-admin key are refused in the one error shape.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { startFakeAuthorizationServer } from '../helpers/fake-authorization-server.js';
import { CredentialStore } from '../../src/providers/credentials.js';
import { tempDir } from '../helpers/tmp.js';

const CONSOLE_CALLBACK = 'http://127.0.0.1:4000/console/oauth/callback';
const ADMIN = 'admin-key-0123456789abcdef';
const USER = 'user-key-0123456789abcdef';
const as = await startFakeAuthorizationServer(t, { redirectUris: [CONSOLE_CALLBACK] });
const dataDir = tempDir(t);
const s = as.settings();
const gw = await startApp(t, {
  server: { api_keys: [{ name: 'admin', key: ADMIN, role: 'admin' }, { name: 'user', key: USER, role: 'user' }] },
  providers: {
    acme: {
      group: 'subscription', format: 'openai', base_url: 'http://127.0.0.1:9/v1',
      auth: { type: 'oauth', oauth: { flow: 'pkce', authorization_url: s.authorization_url, token_url: s.token_url, client_id: s.client_id } },
    },
    keyed: { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:9/v1', auth: { type: 'api_key', key: 'sk-1' } },
  },
}, { dataDir });

async function post(path: string, body: unknown, key = ADMIN): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}

t.test('start, sign in, complete: tokens stored; the same sign-in does not complete twice', async (t) => {
  const start = await post('/api/settings/providers/acme/connect', { redirect_uri: CONSOLE_CALLBACK });
  t.equal(start.status, 200);
  t.match(start.json, { provider: 'acme', redirect_uri: CONSOLE_CALLBACK, state: String });
  t.notOk(JSON.stringify(start.json).includes('verifier'), 'the verifier stays in the gateway');
  const url = new URL(String(start.json.authorization_url));
  t.equal(url.searchParams.get('code_challenge_method'), 'S256');
  const callback = await as.authorize(url.toString());
  const done = await post('/api/settings/providers/acme/connect/complete', { callback_url: callback });
  t.equal(done.status, 200);
  t.match(done.json, { provider: 'acme', connected: true, refreshable: true });
  const tokens = await new CredentialStore(dataDir).load('acme');
  t.ok(tokens && as.isValidAccessToken(tokens.access_token), 'the gateway stored a valid token');
  const again = await post('/api/settings/providers/acme/connect/complete', { callback_url: callback });
  t.equal(again.status, 400);
  t.match(again.json, { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'state' } });
});

t.test('a callback with another state is refused; nothing is exchanged', async (t) => {
  const before = as.grants.length;
  await post('/api/settings/providers/acme/connect', { redirect_uri: CONSOLE_CALLBACK });
  const forged = await post('/api/settings/providers/acme/connect/complete', { code: 'code-x', state: 'forged' });
  t.equal(forged.status, 400);
  t.match(forged.json, { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST' } });
  t.equal(as.grants.length, before);
});

t.test('bad input: not a pkce provider, no redirect URI, unknown provider; admin only', async (t) => {
  t.match(await post('/api/settings/providers/keyed/connect', { redirect_uri: CONSOLE_CALLBACK }), { status: 400, json: { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST' } } });
  t.match(await post('/api/settings/providers/acme/connect', {}), { status: 400, json: { error: { param: 'redirect_uri' } } });
  t.match(await post('/api/settings/providers/acme/connect', { redirect_uri: 'javascript:alert(1)' }), { status: 400, json: { error: { param: 'redirect_uri' } } });
  t.match(await post('/api/settings/providers/nope/connect', {}), { status: 404, json: { error: { code: 'TOLLGATE_ERR_NOT_FOUND' } } });
  t.match(await post('/api/settings/providers/acme/connect', { redirect_uri: CONSOLE_CALLBACK }, USER), { status: 403, json: { error: { code: 'TOLLGATE_ERR_FORBIDDEN' } } });
});
