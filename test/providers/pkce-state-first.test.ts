// `tollgate connect` with flow: pkce: the loopback listener checks the redirect's `state` before anything else, an
// error response's too (RFC 6749 §4.1.2.1: it carries the request's state). Before, `?error=access_denied` without the
// sign-in's state ended it as "authorization was refused": anyone able to reach the listener could end a sign-in
// with a message that was not the authorization server's. The listener is closed afterwards in every case.
import t from 'tap';
import { signInWithPkce } from '../../src/cli/connect-pkce.js';
import { tokenServer } from './oauth-harness.js';

const settings = (tokenUrl: string) => ({ flow: 'pkce' as const, authorization_url: 'http://127.0.0.1:9/authorize', token_url: tokenUrl, client_id: 'cid', scope: 's' });

for (const [label, query, expected] of [
  ['a code with a wrong state', (_s: string) => '?code=abc&state=nope', /another state/],
  ['an error without the state', (_s: string) => '?error=access_denied', /another state/],
  ['an error with a wrong state', (_s: string) => '?error=access_denied&state=nope', /another state/],
  ['an error with the right state', (s: string) => `?error=access_denied&state=${s}`, /authorization was refused \(access_denied\)/],
  ['a code with the right state', (s: string) => `?code=abc&state=${s}`, null],
] as const) {
  t.test(label, async (t) => {
    const tok = await tokenServer(t);
    let redirect = '';
    const res = await signInWithPkce('acme', settings(tok.url), { write: () => undefined }, {
      timeoutMs: 5000,
      openUrl: async (url) => {
        const u = new URL(url);
        redirect = u.searchParams.get('redirect_uri')!;
        await (await fetch(redirect + query(u.searchParams.get('state')!))).text();
      },
    }).then(() => null, (e: Error) => e.message);
    if (expected === null) {
      t.equal(res, null, 'signed in');
      t.equal(tok.st.grants.length, 1, 'one code exchange');
    } else {
      t.match(res, expected);
      t.equal(tok.st.grants.length, 0, 'no call to the token endpoint');
    }
    t.equal(await fetch(redirect).then(() => 'answering', () => 'closed'), 'closed', 'the listener is closed');
  });
}
