// A regression test from a review of OAuth connections (2026-11-30); the defect it guards, as the review found it:
// A 401 marks the token stale; the flag survives a failed refresh, so tokens from a new `tollgate connect`
// are refreshed (or refused) instead of being used. Docs: "a `tollgate connect` while it runs is picked up without a restart".
import t from 'tap';
import { connect } from '../../src/cli/connect.js';
import { startApp } from '../helpers/app.js';
import { startFakeOAuth } from '../helpers/fake-oauth.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';

const E401 = { kind: 'error', status: 401, body: { error: { message: 'invalid token', type: 'invalid_request_error' } } } as const;
const ask = (url: string) => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'acme/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) })
  .then(async (r) => ({ status: r.status, body: await r.text() }));

t.test('A: provider without refresh tokens: a reconnect after a 401 is picked up without a restart', async (t) => {
  const auth = await startFakeOAuth(t, { issueRefreshToken: false, tokenExpiresIn: null });
  const up = await startFakeOpenAI(t);
  const gw = await startApp(t, { providers: { acme: fakeProvider(up.baseUrl, { group: 'subscription', auth: { type: 'oauth', oauth: auth.settings() } }) } }, { dataDir: tempDir(t) });
  await connect(gw.holder.current, 'acme', { write: () => undefined }, { sleep: async () => undefined });
  t.comment('1 first request', (await ask(gw.url)).status);
  up.next(E401 as never);
  t.comment('2 upstream 401', (await ask(gw.url)).status);
  const r3 = await ask(gw.url);
  t.comment('3 after 401 (expected 502 not connected)', r3.status, r3.body);
  await connect(gw.holder.current, 'acme', { write: () => undefined }, { sleep: async () => undefined });
  t.comment('   reconnected; new token', auth.issuedAccessTokens().at(-1), 'valid:', auth.validAccessTokens());
  const r4 = await ask(gw.url);
  t.comment('4 after reconnect (expected 200)', r4.status, r4.body);
  const r5 = await ask(gw.url);
  t.comment('5 again', r5.status, 'upstream requests received:', up.received.length);
  t.equal(r4.status, 200, 'reconnected tokens are used');
});

t.test('B: with refresh tokens: after invalid_grant and a reconnect, the fresh token is used as it is (token endpoint down)', async (t) => {
  const auth = await startFakeOAuth(t, {});
  const up = await startFakeOpenAI(t);
  const gw = await startApp(t, { providers: { acme: fakeProvider(up.baseUrl, { group: 'subscription', auth: { type: 'oauth', oauth: auth.settings() } }) } }, { dataDir: tempDir(t) });
  await connect(gw.holder.current, 'acme', { write: () => undefined }, { sleep: async () => undefined });
  t.comment('1', (await ask(gw.url)).status);
  up.next(E401 as never);
  auth.revokeRefreshTokens();
  t.comment('2 upstream 401', (await ask(gw.url)).status);
  const r3 = await ask(gw.url);
  t.comment('3 refresh refused', r3.status, r3.body);
  await connect(gw.holder.current, 'acme', { write: () => undefined }, { sleep: async () => undefined });
  const grants = auth.grants.length;
  const r4 = await ask(gw.url);
  t.comment('4 after reconnect', r4.status, 'extra token-endpoint calls:', auth.grants.slice(grants).map((g) => g.grant_type));
  t.equal(auth.grants.length, grants, 'fresh tokens from connect are used without a refresh');
});
