// A regression test from a review of OAuth connections: two POST .../connect/complete of one console sign-in at once
// (a double click, a client's retry) sent the authorization code twice: `busy` was set only after an await and
// cleared before the save. A strict provider answers the second use of a code with invalid_grant and revokes the
// tokens the first exchange bought (RFC 6749 §4.1.2), so the file held dead tokens. Now the second request is the
// documented 400 (param state) and sends nothing.
import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { startFakeAuthorizationServer } from '../helpers/fake-authorization-server.js';
import { tempDir } from '../helpers/tmp.js';
import { CredentialStore } from '../../src/providers/credentials.js';

const CALLBACK = 'http://127.0.0.1:4000/console/oauth/callback';
const ADMIN = 'admin-key-0123456789abcdef';

t.test('two completes of one sign-in at once: one exchange, the other refused, the stored token valid', async (t) => {
  const as = await startFakeAuthorizationServer(t, { redirectUris: [CALLBACK] });
  const s = as.settings();
  const dataDir = tempDir(t);
  const gw = await startApp(t, {
    server: { api_keys: [{ name: 'admin', key: ADMIN, role: 'admin' }] },
    providers: {
      acme: {
        group: 'subscription', format: 'openai', base_url: 'http://127.0.0.1:9/v1',
        auth: { type: 'oauth', oauth: { flow: 'pkce', authorization_url: s.authorization_url, token_url: s.token_url, client_id: s.client_id } },
      },
    },
  }, { dataDir });
  const post = async (path: string, body: unknown) => {
    const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, body: JSON.stringify(body) });
    return { status: res.statusCode, json: (await res.body.json()) as { connected?: boolean; error?: Record<string, unknown> } };
  };

  const started = await post('/api/settings/providers/acme/connect', { redirect_uri: CALLBACK });
  const callback = await as.authorize(String((started.json as Record<string, unknown>).authorization_url));
  const answers = await Promise.all([1, 2].map(() => post('/api/settings/providers/acme/connect/complete', { callback_url: callback })));
  const [done, second] = answers.sort((x, y) => x.status - y.status);

  t.equal(as.grants.filter((g) => g.grant_type === 'authorization_code').length, 1, 'the code reached the token endpoint once');
  t.match(done, { status: 200, json: { connected: true } }, 'one complete signs in');
  t.equal(second!.status, 400, 'the other is a 400');
  t.match(second!.json.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'state', message: /being completed by another request/ });
  const tokens = await new CredentialStore(dataDir).load('acme');
  t.ok(tokens !== null && as.isValidAccessToken(tokens.access_token), 'the stored access token is valid at the provider');
  t.match(await post('/api/settings/providers/acme/connect/complete', { callback_url: callback }), { status: 400, json: { error: { param: 'state', message: /no sign-in in progress/ } } }, 'and the sign-in is over');
});
