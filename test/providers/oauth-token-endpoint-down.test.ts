// From a review of the refresh fixes: a token endpoint that is down (503 temporarily_unavailable) while the access
// token has expired was answered "could not be refreshed", yet recorded under the same code as a refused refresh
// token (TOLLGATE_ERR_PROVIDER_AUTH), so /api/quota's connection flag told the admin to reconnect (oauth_reconnect),
// which cannot help: the refresh token is fine. The failure now has its own code, TOLLGATE_ERR_TOKEN_REFRESH_FAILED,
// and the flag says provider_down.
import t from 'tap';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';
import { connectionProblem } from '../../src/accounting/quota-connection.js';

t.test('an expired token and a token endpoint down: provider_down, not a reconnect; the refresh token kept', async (t) => {
  const tok = await tokenServer(t);
  const up = await upstream(t);
  const gw = await gateway(t, { acme: provider(up.url, tok.url) });
  await seed(gw.store, 'acme', { expiresInMs: -1000 });
  tok.st.mode = 'temporarily_unavailable';
  const answers = [await gw.ask(), await gw.ask(), await gw.ask()];
  t.same(answers.map((a) => a.status), [502, 502, 502]);
  t.match(JSON.parse(answers[0]!.body), { error: { code: 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED', message: /could not be refreshed/ } });
  const rows = await gw.rows();
  t.same(rows.map((r) => r.error_type), ['TOLLGATE_ERR_TOKEN_REFRESH_FAILED', 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED', 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED'], 'the rows name the failure');
  const quota = (await (await fetch(`${gw.url}/api/quota?refresh=true`)).json()) as { providers?: { id: string; connection_problem: unknown }[] } | { id: string; connection_problem: unknown }[];
  const list = Array.isArray(quota) ? quota : (quota.providers ?? []);
  t.match(list.find((e) => e.id === 'acme')?.connection_problem, { reason: 'provider_down', failures: 3, last_error: 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED' });
  t.equal((await gw.store.load('acme'))?.refresh_token, 'RT-SECRET-0', 'the refresh token is kept');
});

t.test('the flag\'s rule: a refused or missing connection is a reconnect, a token endpoint down is the provider down', async (t) => {
  const oauth = { auth: { type: 'oauth' } } as never;
  const recent = (errorType: string, httpStatus = 502) => ({ failures: 2, successes: 0, errorType, httpStatus }) as never;
  t.equal(connectionProblem(oauth, recent('TOLLGATE_ERR_PROVIDER_AUTH'))?.reason, 'oauth_reconnect');
  t.equal(connectionProblem(oauth, recent('TOLLGATE_ERR_TOKEN_REFRESH_FAILED'))?.reason, 'provider_down');
  t.equal(connectionProblem(oauth, recent('401', 401))?.reason, 'oauth_reconnect');
});
