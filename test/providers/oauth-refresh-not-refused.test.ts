// A regression test from a review of OAuth connections: a token endpoint that answered 429 (rate limited) or an HTML
// page (a proxy's sign-in, a firewall; even with 200) was taken as a refusal of the refresh token: requests whose
// access token was still good failed with "not connected: run tollgate connect" and the tokens were dropped from
// memory. A refusal is an OAuth error object (RFC 6749 §5.2); anything else is a refresh that could not be done now:
// the still-good token is used, an expired one fails with "could not be refreshed", and the endpoint is asked again
// after 5 s, or after its Retry-After (at most 60 s), never by every request in a row.
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import { OAuthSession } from '../../src/providers/oauth.js';
import { CredentialStore } from '../../src/providers/credentials.js';
import { gateway, provider, seed, upstream } from './oauth-harness.js';
import { tempDir } from '../helpers/tmp.js';

interface Answer { status: number; type: string; body: string; headers?: Record<string, string> }
const TOO_MANY: Answer = { status: 429, type: 'text/html', body: '<html>Too Many Requests</html>', headers: { 'retry-after': '30' } };
const PROXY_PAGE: Answer = { status: 200, type: 'text/html', body: '<html>Sign in to the proxy</html>' };
const NO_TOKEN: Answer = { status: 200, type: 'application/json', body: '{"token_type":"Bearer"}' };
const GOOD: Answer = { status: 200, type: 'application/json', body: '{"access_token":"AT-NEW","refresh_token":"RT-NEW","token_type":"Bearer","expires_in":3600}' };

/** A token endpoint that gives `answer` and records the refresh tokens it was sent. */
async function tokenEndpoint(t: Test, first: Answer) {
  const st = { answer: first, sent: [] as string[] };
  const srv = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    st.sent.push(new URLSearchParams(body).get('refresh_token') ?? '');
    res.writeHead(st.answer.status, { 'content-type': st.answer.type, ...st.answer.headers }).end(st.answer.body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => { srv.closeAllConnections(); srv.close(() => r()); }));
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/token`, st };
}

for (const [what, answer] of [['429 with an HTML page', TOO_MANY], ['200 with an HTML page', PROXY_PAGE]] as const) {
  t.test(`the token endpoint answers ${what}: a token still good for 50 s is used, and the endpoint is not asked by every request`, async (t) => {
    const tok = await tokenEndpoint(t, answer);
    const up = await upstream(t);
    const gw = await gateway(t, { acme: provider(up.url, tok.url) });
    await seed(gw.store, 'acme', { expiresInMs: 50_000 }); // inside the 60 s margin: refreshed before use
    const answers = [await gw.ask(), await gw.ask(), await gw.ask()];
    t.same(answers.map((a) => a.status), [200, 200, 200], 'every request is answered');
    t.same(up.st.auth, ['Bearer AT-SECRET-0', 'Bearer AT-SECRET-0', 'Bearer AT-SECRET-0'], 'with the still-good token');
    t.same(tok.st.sent, ['RT-SECRET-0'], 'one refresh tried; the next requests do not ask again at once');
    t.equal((await gw.store.load('acme'))?.refresh_token, 'RT-SECRET-0', 'the stored tokens are kept');
  });
}

/** A clock only the test moves. */
function clock(start = 1_800_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

async function session(t: Test, first: Answer, expiresInMs: number) {
  const tok = await tokenEndpoint(t, first);
  const c = clock();
  const store = new CredentialStore(tempDir(t), {});
  await store.save('acme', { access_token: 'AT-OLD', refresh_token: 'RT-OLD', token_type: 'Bearer', expires_at: c.now() + expiresInMs, obtained_at: c.now() });
  return { tok, c, store, s: new OAuthSession('acme', { token_url: tok.url, client_id: 'cid' }, store, c.now) };
}

t.test('an expired token and a 429: "could not be refreshed", not "not connected"; Retry-After is honoured, then the refresh works', async (t) => {
  const { tok, c, s } = await session(t, TOO_MANY, 10_000);
  t.equal(await s.accessToken(), 'AT-OLD', 'still good for 10 s: used');
  c.advance(20_000); // expired now; 10 s of the 30 s Retry-After are left
  await t.rejects(s.accessToken(), { code: 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED', message: /^provider 'acme': the access token could not be refreshed \(token endpoint .* answered HTTP 429 without a JSON object \(content-type: text\/html\)\); the next request after 10 s tries again$/ });
  t.same(tok.st.sent, ['RT-OLD'], 'the endpoint was not asked again within its Retry-After');
  tok.st.answer = GOOD;
  c.advance(10_000);
  t.equal(await s.accessToken(), 'AT-NEW', 'after the Retry-After the same refresh token is refreshed');
  t.same(tok.st.sent, ['RT-OLD', 'RT-OLD']);
});

t.test('a 2xx without an access_token, and a 429 with an OAuth error object, are not refusals either', async (t) => {
  const { tok, c, s } = await session(t, NO_TOKEN, 0);
  await t.rejects(s.accessToken(), { message: /could not be refreshed \(token endpoint .* answered without an access_token\); the next request after 5 s tries again$/ });
  c.advance(5_000);
  tok.st.answer = { status: 429, type: 'application/json', body: '{"error":"rate_limited","error_description":"slow down"}' };
  await t.rejects(s.accessToken(), { message: /could not be refreshed \(token endpoint .* could not refresh the token \(HTTP 429: rate_limited: slow down\)\)/ });
  c.advance(5_000);
  tok.st.answer = { status: 400, type: 'application/json', body: '{"error":"invalid_grant"}' };
  await t.rejects(s.accessToken(), { message: /^provider 'acme' is not connected: run `tollgate connect acme` \(token endpoint .* refused the refresh token \(invalid_grant\)\)$/ }, 'a 400 with an OAuth error is the refusal');
  t.same(tok.st.sent, ['RT-OLD', 'RT-OLD', 'RT-OLD']);
});
