// A token endpoint that hangs while the access token is still good (inside the 60 s refresh margin): the first request
// waits for the refresh at most EARLY_REFRESH_WAIT_MS (2 s) and goes with the current token; the requests after it do
// not wait at all while that refresh is under way (src/providers/oauth.ts, OAuthSession.accessToken). Before, each
// request waited the endpoint's 15 s timeout. An expired or refused token still waits for its refresh.
import t from 'tap';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';

t.setTimeout(60_000);

t.test('a hanging token endpoint costs a still-good token at most the short wait', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  const gw = await gateway(t, { acme: provider(up.url, tok.url) });
  await seed(gw.store, 'acme', { expiresInMs: 40_000 }); // good for 40 s: inside the margin, so refreshed before use
  tok.st.mode = 'hang';
  const timed = async () => { const t0 = Date.now(); const r = await gw.ask(); return { ...r, ms: Date.now() - t0 }; };
  const first = await timed();
  t.equal(first.status, 200, 'the first request is answered');
  t.ok(first.ms >= 1500 && first.ms < 6000, `after the short wait, not the endpoint's 15 s (${first.ms} ms)`);
  const [second, third] = await Promise.all([timed(), timed()]);
  t.same([second.status, third.status], [200, 200]);
  t.ok(second.ms < 1500 && third.ms < 1500, `the next ones do not wait for the refresh under way (${second.ms}, ${third.ms} ms)`);
  t.equal(tok.st.grants.length, 1, 'one refresh under way for all of them');
  t.same(up.st.auth, ['Bearer AT-SECRET-0', 'Bearer AT-SECRET-0', 'Bearer AT-SECRET-0'], 'each with the current token');
});

t.test('a token endpoint that answers within the wait: the refreshed token is used', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  const gw = await gateway(t, { acme: provider(up.url, tok.url) });
  await seed(gw.store, 'acme', { expiresInMs: 40_000 });
  tok.st.delayMs = 300;
  t.equal((await gw.ask()).status, 200);
  t.same(up.st.auth, ['Bearer AT-SECRET-1'], 'the request waited for the refresh and went with its token');
});
