// A regression test from a review of OAuth connections: `tollgate connect` while the gateway runs (another account,
// another scope) was overwritten by the gateway's next refresh of the grant it held in memory: the refresh read no
// file, so it refreshed the old chain and saved it over the reconnect's tokens. docs/connections.md: "Connecting
// again replaces the stored tokens" and "a `tollgate connect` while it runs is picked up without a restart". Now a
// refresh first adopts newer tokens from the file (a later obtained_at), and refreshes those only if they too are
// about to expire.
import t, { type Test } from 'tap';
import { connect } from '../../src/cli/connect.js';
import { startApp } from '../helpers/app.js';
import { startFakeOAuth } from '../helpers/fake-oauth.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';
import { CredentialStore } from '../../src/providers/credentials.js';

const E401 = { kind: 'error', status: 401, body: { error: { message: 'invalid token', type: 'invalid_request_error' } } } as const;
const quiet = { write: () => undefined };
/** The fake's tokens are `at-<serial>-<chain>` / `rt-<serial>-<chain>`: the grant (device code) they descend from. */
const chainOf = (token: string | undefined) => token?.split('-').at(-1);

async function setup(t: Test, tokenExpiresIn: number) {
  const auth = await startFakeOAuth(t, { tokenExpiresIn });
  const up = await startFakeOpenAI(t);
  const dataDir = tempDir(t);
  const gw = await startApp(t, { providers: { acme: fakeProvider(up.baseUrl, { group: 'subscription', auth: { type: 'oauth', oauth: auth.settings() } }) } }, { dataDir });
  const ask = async () => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'acme/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) });
    await r.arrayBuffer();
    return { status: r.status, sent: String(up.received.at(-1)?.headers.authorization ?? '').replace(/^Bearer /, '') };
  };
  const store = new CredentialStore(dataDir);
  const reconnect = async () => {
    await connect(gw.holder.current, 'acme', quiet, { sleep: async () => undefined });
    return (await store.load('acme'))!;
  };
  return { auth, up, ask, store, reconnect };
}

t.test('the held token is about to expire: the next request uses the reconnect\'s tokens, and the file keeps them', async (t) => {
  const { auth, ask, store, reconnect } = await setup(t, 62);
  const first = await reconnect();
  const r1 = await ask();
  t.equal(chainOf(r1.sent), '1', 'the first request uses the first grant');
  auth.set({ tokenExpiresIn: 3600 });
  const second = await reconnect(); // the user connects again: a new grant
  t.equal(chainOf(second.access_token), '2');
  await new Promise((r) => setTimeout(r, 2500)); // the held token (62 s) is now within the 60 s refresh margin
  const r2 = await ask();
  t.equal(r2.status, 200);
  t.equal(r2.sent, second.access_token, 'the request sends the reconnect\'s access token upstream');
  const after = await store.load('acme');
  t.equal(after?.refresh_token, second.refresh_token, 'the file still holds the reconnect\'s refresh token');
  t.notOk(auth.grants.some((g) => g.grant_type === 'refresh_token' && g.params.refresh_token === first.refresh_token), 'the old grant was not refreshed');
});

t.test('the reconnect\'s tokens are about to expire too: those are refreshed, not the old ones', async (t) => {
  const { auth, ask, store, reconnect } = await setup(t, 62);
  const first = await reconnect();
  t.equal(chainOf((await ask()).sent), '1');
  const second = await reconnect();
  const before = auth.grants.length;
  await new Promise((r) => setTimeout(r, 2500)); // both grants' tokens are within the margin now
  const r2 = await ask();
  t.equal(r2.status, 200);
  t.equal(chainOf(r2.sent), '2', 'the token sent upstream descends from the reconnect');
  t.not(r2.sent, second.access_token, 'refreshed, since it too was about to expire');
  const refreshed = auth.grants.slice(before).filter((g) => g.grant_type === 'refresh_token').map((g) => g.params.refresh_token);
  t.same(refreshed, [second.refresh_token], 'the one refresh used the reconnect\'s refresh token, never the first grant\'s');
  t.not(first.refresh_token, second.refresh_token);
  t.equal(chainOf((await store.load('acme'))?.refresh_token), '2', 'the file holds the reconnect\'s chain');
});

t.test('after an upstream 401: the reconnect\'s token is used as it is, not the old grant refreshed over it', async (t) => {
  const { auth, up, ask, store, reconnect } = await setup(t, 3600);
  await reconnect();
  t.equal(chainOf((await ask()).sent), '1');
  const second = await reconnect();
  up.next(E401 as never);
  t.equal((await ask()).status, 401, 'the held token is refused once (the 401 reaches the client)');
  const grants = auth.grants.length;
  const r3 = await ask();
  t.equal(r3.status, 200);
  t.equal(r3.sent, second.access_token, 'the next request sends the reconnect\'s access token');
  t.equal(auth.grants.length, grants, 'and no refresh was sent');
  t.equal((await store.load('acme'))?.refresh_token, second.refresh_token, 'the file still holds the reconnect\'s tokens');
});
