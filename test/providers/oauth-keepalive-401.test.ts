// A keep-alive ping (services/keepalive.ts) refused 401 on an OAuth connection marks the token stale, as a client
// request's 401 does (router.tokenRefused): the next client request refreshes first instead of sending the refused
// token and answering the client a 401.
import t from 'tap';
import { waitFor } from '../helpers/wait.js';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';

t.test('a keep-alive ping\'s 401 marks the OAuth token stale', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  const gw = await gateway(t, { acme: { ...provider(up.url, tok.url), keepalive: { enabled: true, window: '1s' } } });
  await seed(gw.store, 'acme');
  up.st.validTokens = new Set(['AT-SECRET-0']);
  t.equal((await gw.ask()).status, 200, 'a client request with the stored token opens the window');
  up.st.validTokens = new Set(['AT-SECRET-1']); // AT-0 revoked upstream; a refresh gives AT-1
  let pings: Record<string, unknown>[] = [];
  await waitFor(async () => (pings = (await gw.rows()).filter((r) => r.kind === 'keepalive')).length > 0, 15_000);
  t.match(pings[0], { kind: 'keepalive', status: 'failure', http_status: 401 }, 'the ping was refused');
  t.equal(tok.st.grants.length, 0, 'nothing refreshed yet (the token had not expired)');
  const sentBefore = up.st.auth.length;
  const next = await gw.ask();
  t.equal(next.status, 200, 'the next client request refreshes first and is answered');
  t.equal(tok.st.grants.length, 1, 'one refresh');
  t.same(up.st.auth.slice(sentBefore), ['Bearer AT-SECRET-1'], 'the refused token was not sent again');
});
