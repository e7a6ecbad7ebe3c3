// server.trust_proxy: the client IP the limits are keyed by is the right-most X-Forwarded-For entry that is not a
// trusted proxy, when the socket peer is one; otherwise the socket address. (A file of its own: trust_proxy is a
// start-time setting, and one process holds one embedded store.)

import t from 'tap';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { send } from '../helpers/raw-http.js';

const KEY = 'k-admin-0123456789abcdef';

t.test('behind a trusted proxy the right-most untrusted X-Forwarded-For entry is the client', async (t) => {
  const g = await startApp(t, {
    server: { api_keys: [{ name: 'a', key: KEY }], trust_proxy: ['127.0.0.1', '10.0.0.0/8'], rate_limit: { auth_failures_per_minute: 2 } },
    providers: { demo: DEMO_PROVIDER },
  });
  const wrong = (xff: string) => ({ authorization: 'Bearer guess-0000000000000000', 'x-forwarded-for': xff });
  // The attacker controls the left part of the header; the proxy chain appends the real address on the right.
  t.equal((await send(g.url, 'GET', '/v1/models', { headers: wrong('1.1.1.1, 203.0.113.9, 10.1.2.3') })).status, 401);
  t.equal((await send(g.url, 'GET', '/v1/models', { headers: wrong('2.2.2.2, 203.0.113.9, 10.9.9.9') })).status, 401);
  t.equal((await send(g.url, 'GET', '/v1/models', { headers: wrong('3.3.3.3, 203.0.113.9') })).status, 429, 'a spoofed left part does not make a new client');
  const neighbour = await send(g.url, 'GET', '/v1/models', { headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': '203.0.113.10, 10.1.2.3' } });
  t.equal(neighbour.status, 200, 'another client behind the same proxy is not blocked');
  const untrustedPeer = await send(g.url, 'GET', '/v1/models', { headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': '203.0.113.11' }, from: '127.0.0.2' });
  t.equal(untrustedPeer.status, 200, '127.0.0.2 is not a trusted proxy: it is its own client');
});


// The wrong-key limiter's store is a child of the rate-limit plugin's, which did not inherit the plugin's `cache`: it
// remembered toad-cache's default of 5,000 clients, so a blocked client was let back in once 5,000 others had each sent
// one wrong key (an IPv6 /48 holds 65,536 of the /64s a client is keyed by). docs/security.md promises 10,000.
t.test('a blocked client stays blocked while 6,000 other clients each send a wrong key', async (t) => {
  const g = await startApp(t, {
    server: { api_keys: [{ name: 'a', key: KEY }], trust_proxy: ['127.0.0.1'], rate_limit: { auth_failures_per_minute: 2 } },
    providers: { demo: DEMO_PROVIDER },
  });
  const wrong = (ip: string) => g.app.inject({ method: 'GET', url: '/v1/models', remoteAddress: '127.0.0.1', headers: { authorization: 'Bearer guess-0000000000000000', 'x-forwarded-for': ip } });
  for (let i = 0; i < 2; i++) t.equal((await wrong('203.0.113.9')).statusCode, 401);
  t.equal((await wrong('203.0.113.9')).statusCode, 429, 'blocked');
  let refused = 0;
  for (let i = 0; i < 6_000; i++) if ((await wrong(`198.18.${i >> 8}.${i & 255}`)).statusCode === 401) refused++;
  t.equal(refused, 6_000, 'each other client: one wrong key, a 401');
  const again = await wrong('203.0.113.9');
  t.equal(again.statusCode, 429, 'the blocked client is still blocked');
  const right = await g.app.inject({ method: 'GET', url: '/v1/models', remoteAddress: '127.0.0.1', headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': '203.0.113.9' } });
  t.equal(right.statusCode, 429, 'even with the right key, until the window ends');
});

// Some proxies append the client's address with its port (Azure's application gateway: `203.0.113.9:50001`): taken as
// it was, each connection was a client of its own for both limits, and a trusted proxy written with a port was no
// longer recognised as one.
t.test('an X-Forwarded-For entry with a port is its address: one client for both limits', async (t) => {
  const g = await startApp(t, {
    server: {
      api_keys: [{ name: 'a', key: KEY }], trust_proxy: ['127.0.0.1', '10.0.0.0/8'],
      rate_limit: { auth_failures_per_minute: 2, requests_per_minute: 3 },
    },
    providers: { demo: DEMO_PROVIDER },
  });
  const get = (xff: string, key = 'guess-0000000000000000') =>
    send(g.url, 'GET', '/v1/models', { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': xff } });
  t.equal((await get('203.0.113.9:50001, 10.1.2.3:443')).status, 401);
  t.equal((await get('203.0.113.9:50002, 10.1.2.3:8443')).status, 401);
  t.equal((await get('203.0.113.9:50003')).status, 429, 'the same address on another port is the same client');
  t.equal((await get('203.0.113.9', KEY)).status, 429, 'and without a port too');

  t.equal((await get('[2001:db8::7]:50001', 'guess-1')).status, 401);
  t.equal((await get('[2001:db8::7]:50002', 'guess-2')).status, 401);
  t.equal((await get('2001:db8::7', 'guess-3')).status, 429, 'IPv6 in brackets with a port: the address');

  const served: number[] = [];
  for (let port = 40000; port < 40004; port++) served.push((await get(`198.51.100.4:${port}`, KEY)).status);
  t.same(served, [200, 200, 200, 429], 'requests_per_minute counts one client across its ports');
});
