// The authorization code grant with PKCE (providers/pkce.ts, cli/connect-pkce.ts) end to end against a fake
// authorization server on a real socket that enforces RFC 6749, RFC 7636 and RFC 8252: `connect` with a loopback
// redirect (happy path), a forged state, an expired code, a paste-back code, and refresh (before expiry, after a 401,
// with refresh-token rotation). Tokens land encrypted in the credential store; nothing secret is printed.

import t from 'tap';
import { PassThrough } from 'node:stream';
import { parseConfig } from '../../src/config/load.js';
import { connect } from '../../src/cli/connect.js';
import { CredentialStore } from '../../src/providers/credentials.js';
import { OAuthSession } from '../../src/providers/oauth.js';
import { codeFromCallback, createPkce, s256 } from '../../src/providers/pkce.js';
import { startFakeAuthorizationServer, type FakeAuthorizationServer } from '../helpers/fake-authorization-server.js';
import { tempDir } from '../helpers/tmp.js';

const ENV = { TOLLGATE_SECRET_KEY: 'a-test-secret-key-of-enough-length' };

function config(as: FakeAuthorizationServer, dataDir: string, oauth: Record<string, unknown> = {}) {
  const s = as.settings();
  return parseConfig({
    storage: { data_dir: dataDir },
    providers: {
      acme: {
        group: 'subscription', format: 'openai', base_url: 'http://127.0.0.1:9/v1',
        auth: { type: 'oauth', oauth: { flow: 'pkce', authorization_url: s.authorization_url, token_url: s.token_url, client_id: s.client_id, scope: 'chat', ...oauth } },
      },
    },
  }, {});
}

function output() {
  const lines: string[] = [];
  return { write: (s: string) => void lines.push(s), text: () => lines.join('') };
}

/** The browser: open the URL at the authorization server, then follow its redirect to wherever it points. */
const browser = (as: FakeAuthorizationServer) => async (url: string) => {
  const location = await as.authorize(url);
  const res = await fetch(location);
  await res.arrayBuffer();
};

t.test('PKCE pieces: a 43-character verifier and its S256 challenge (RFC 7636 appendix B)', async (t) => {
  const { verifier, challenge } = createPkce();
  t.match(verifier, /^[A-Za-z0-9_-]{43}$/);
  t.equal(challenge, s256(verifier));
  t.equal(s256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'), 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'the RFC 7636 example');
  t.equal(codeFromCallback('http://127.0.0.1:1/callback?code=abc&state=s1', 's1'), 'abc');
  t.equal(codeFromCallback('abc#s1', 's1'), 'abc');
  t.throws(() => codeFromCallback('?code=abc&state=other', 's1'), /another state/);
  t.throws(() => codeFromCallback('?error=access_denied&state=s1', 's1'), /refused \(access_denied/);
  t.throws(() => codeFromCallback('abc', 's1'), /not an authorization response/, 'a bare code only where allowed');
  t.equal(codeFromCallback('abc', 's1', { allowBareCode: true }), 'abc');
});

t.test('happy path: loopback redirect on 127.0.0.1, code + verifier exchanged, tokens stored encrypted', async (t) => {
  const as = await startFakeAuthorizationServer(t);
  const dir = tempDir(t);
  const out = output();
  await connect(config(as, dir), 'acme', out, { env: ENV, openUrl: browser(as), timeoutMs: 10_000 });
  const [auth] = as.authorizations;
  t.match(auth, { response_type: 'code', client_id: 'tollgate-pkce-test-client', code_challenge_method: 'S256', scope: 'chat' });
  t.match(auth!.redirect_uri, /^http:\/\/127\.0\.0\.1:\d+\/callback$/, 'an ephemeral loopback port (RFC 8252 §7.3)');
  const grant = as.grants.find((g) => g.grant_type === 'authorization_code')!;
  t.equal(grant.answer, 'issued');
  t.equal(s256(grant.params.code_verifier!), auth!.code_challenge, 'the verifier of the challenge sent');
  t.equal(grant.params.redirect_uri, auth!.redirect_uri);
  const tokens = await new CredentialStore(dir, ENV).load('acme');
  t.ok(tokens && as.isValidAccessToken(tokens.access_token), 'a valid access token stored');
  t.ok(tokens?.refresh_token);
  const text = out.text();
  t.match(text, /Connected provider 'acme'/);
  for (const secret of [tokens!.access_token, tokens!.refresh_token!, grant.params.code!, grant.params.code_verifier!]) t.notOk(text.includes(secret), 'no secret printed');
});

t.test('wrong state: the redirect is refused, no code is exchanged, nothing is stored', async (t) => {
  const as = await startFakeAuthorizationServer(t, { forgeState: true });
  const dir = tempDir(t);
  await t.rejects(connect(config(as, dir), 'acme', output(), { env: ENV, openUrl: browser(as), timeoutMs: 10_000 }), /another state than the request sent/);
  t.equal(as.grants.length, 0, 'the token endpoint was never asked');
  t.equal(await new CredentialStore(dir, ENV).load('acme'), null);
});

t.test('expired code: the token endpoint refuses it (invalid_grant), nothing is stored', async (t) => {
  const as = await startFakeAuthorizationServer(t, { codeTtlMs: -1 });
  const dir = tempDir(t);
  await t.rejects(connect(config(as, dir), 'acme', output(), { env: ENV, openUrl: browser(as), timeoutMs: 10_000 }), /refused the authorization code \(invalid_grant: code expired\)/);
  t.same(as.grants.map((g) => g.answer), ['invalid_grant']);
  t.equal(await new CredentialStore(dir, ENV).load('acme'), null);
});

t.test('denied: the error comes back through the redirect', async (t) => {
  const as = await startFakeAuthorizationServer(t, { deny: true });
  await t.rejects(connect(config(as, tempDir(t)), 'acme', output(), { env: ENV, openUrl: browser(as), timeoutMs: 10_000 }), /refused \(access_denied: the user said no\)/);
});

t.test('paste-back: a registered redirect URI, the address pasted on standard input', async (t) => {
  const registered = 'https://console.example.invalid/oauth/code/callback';
  const as = await startFakeAuthorizationServer(t, { redirectUris: [registered] });
  const dir = tempDir(t);
  const input = new PassThrough();
  await connect(config(as, dir, { redirect_uri: registered }), 'acme', output(), {
    env: ENV, input,
    // the user signs in, the browser lands on the registered page; the user copies its address into the terminal
    openUrl: async (url) => void input.write(`${await as.authorize(url)}\n`),
  });
  t.equal(as.authorizations[0]!.redirect_uri, registered);
  t.equal(as.grants[0]!.params.redirect_uri, registered);
  t.ok(await new CredentialStore(dir, ENV).load('acme'));
});

t.test('a code is single-use: replaying it is refused and revokes what it gave', async (t) => {
  const as = await startFakeAuthorizationServer(t);
  const dir = tempDir(t);
  await connect(config(as, dir), 'acme', output(), { env: ENV, openUrl: browser(as), timeoutMs: 10_000 });
  const first = as.grants[0]!.params;
  const res = await fetch(as.tokenUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(first) });
  t.equal(res.status, 400);
  t.match(await res.json(), { error: 'invalid_grant' });
  const stored = await new CredentialStore(dir, ENV).load('acme');
  t.notOk(as.isValidAccessToken(stored!.access_token), 'the tokens of a replayed code are revoked (RFC 6749 §4.1.2)');
});

t.test('refresh: before expiry, after a 401, with refresh-token rotation', async (t) => {
  const as = await startFakeAuthorizationServer(t, { tokenExpiresIn: 30 });
  const dir = tempDir(t);
  const cfg = config(as, dir);
  await connect(cfg, 'acme', output(), { env: ENV, openUrl: browser(as), timeoutMs: 10_000 });
  const store = new CredentialStore(dir, ENV);
  const connected = (await store.load('acme'))!;
  const session = new OAuthSession('acme', cfg.providers.acme!.auth.oauth!, store);
  // 30 s left is inside the 60 s refresh margin: the first use refreshes
  const refreshed = await session.accessToken();
  t.not(refreshed, connected.access_token, 'refreshed before expiry');
  t.ok(as.isValidAccessToken(refreshed));
  const afterFirst = (await store.load('acme'))!;
  t.not(afterFirst.refresh_token, connected.refresh_token, 'the refresh token was rotated and the new one saved');
  // the old refresh token is spent: the server refuses it
  const reuse = await fetch(as.tokenUrl, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: connected.refresh_token!, client_id: 'tollgate-pkce-test-client' }),
  });
  t.match(await reuse.json(), { error: 'invalid_grant' });
  // an upstream 401 on the current token: the router invalidates it, the next use refreshes again
  as.set({ tokenExpiresIn: 3600 });
  session.invalidate(refreshed);
  const after401 = await session.accessToken();
  t.not(after401, refreshed);
  t.ok(as.isValidAccessToken(after401));
  t.same(as.grants.filter((g) => g.grant_type === 'refresh_token' && g.answer === 'issued').length, 2);
});

t.test('config: pkce needs authorization_url; device_code keys are refused with it', async (t) => {
  t.throws(() => parseConfig({ providers: { a: { group: 'free', format: 'openai', base_url: 'http://127.0.0.1:9', auth: { type: 'oauth', oauth: { flow: 'pkce', token_url: 'http://127.0.0.1:9/t', client_id: 'c' } } } } }, {}), /authorization_url: is required when flow is pkce/);
  t.throws(() => parseConfig({ providers: { a: { group: 'free', format: 'openai', base_url: 'http://127.0.0.1:9', auth: { type: 'oauth', oauth: { token_url: 'http://127.0.0.1:9/t', client_id: 'c' } } } } }, {}), /device_authorization_url: is required when flow is device_code/);
  t.throws(() => parseConfig({ providers: { a: { group: 'free', format: 'openai', base_url: 'http://127.0.0.1:9', auth: { type: 'oauth', oauth: { flow: 'pkce', authorization_url: 'http://127.0.0.1:9/a', device_authorization_url: 'http://127.0.0.1:9/d', token_url: 'http://127.0.0.1:9/t', client_id: 'c' } } } } }, {}), /device_authorization_url: is only used when flow is device_code/);
});
