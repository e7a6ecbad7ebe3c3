// `tollgate connect`'s loopback redirect listener (providers/pkce.ts, listenForRedirect) on a real socket: anything on
// the machine may connect to its port, so a request target the URL parser refuses (`GET //[`) must be answered 400
// without ending the process or the wait; the browser's real redirect from the fake authorization server still
// brings the code back afterwards.

import t from 'tap';
import { authorizationRequest, listenForRedirect, newState } from '../../src/providers/pkce.js';
import { startFakeAuthorizationServer } from '../helpers/fake-authorization-server.js';
import { exchange } from '../helpers/raw-http.js';

t.test('an unparsable request target is a 400; the listener keeps waiting for the real redirect', async (t) => {
  const as = await startFakeAuthorizationServer(t);
  const state = newState();
  const listener = await listenForRedirect({ state, timeoutMs: 10_000 });
  t.teardown(() => listener.close());
  const port = Number(new URL(listener.redirectUri).port);
  let settled = false;
  void listener.code.then(() => (settled = true), () => (settled = true));

  for (const target of ['//[', '//[::1', 'http://[/callback']) {
    const a = await exchange(port, `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`);
    t.equal(a.status, 400, `GET ${target}: 400`);
  }
  const notFound = await exchange(port, 'GET /elsewhere HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n');
  t.equal(notFound.status, 404, 'another path is still a 404');
  t.notOk(settled, 'none of these ended the wait');

  const location = await as.authorize(authorizationRequest(as.settings(), listener.redirectUri, state).url);
  const page = await fetch(location);
  t.equal(page.status, 200, 'the browser\'s redirect is answered "Signed in"');
  await page.arrayBuffer();
  t.match(await listener.code, /^code-/, 'and brings the code back');
});
