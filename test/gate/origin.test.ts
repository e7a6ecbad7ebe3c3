// src/gate/origin.ts as pure functions: which Host values are loopback, and which requests a browser marks as coming
// from another origin. The real-socket side (every route, the config file, the webhook) is test/security/rebinding.test.ts.

import t from 'tap';
import type { FastifyRequest } from 'fastify';
import { browserRefusal, isLoopbackHost } from '../../src/gate/origin.js';

t.test('isLoopbackHost: localhost, *.localhost, 127.0.0.0/8 and [::1], with or without a port; nothing else', async (t) => {
  const loopback = [
    'localhost', 'localhost:4000', 'LOCALHOST:4000', 'LocalHost', 'tollgate.localhost', 'a.b.localhost:1', 'x.LOCALHOST:65535',
    '127.0.0.1', '127.0.0.1:4000', '127.255.255.254:80', '127.1.2.3', '[::1]', '[::1]:4000',
  ];
  const foreign = [
    '', 'attacker.example', 'attacker.example:4000', 'localhost.', 'localhost.:4000', '.localhost', '..localhost', 'localhost.example',
    'localhost.attacker.example', 'evil-localhost', 'mylocalhost', '127.0.0.1.nip.io', '127.1', '127.0.0.01', '127.0.0.256', '128.0.0.1', '0.0.0.0',
    '0.0.0.0:4000', '192.168.1.5', '[::2]', '[::1', '[::1]x', '[::1]:', '[::1]:x', '[0:0:0:0:0:0:0:1]', '[::ffff:127.0.0.1]', '::1',
    'localhost:', 'localhost:x', 'localhost:123456', 'localhost:4000:80', 'localhost:-1', 'localhost :4000', ' localhost', 'user@localhost',
  ];
  for (const h of loopback) t.equal(isLoopbackHost(h), true, `'${h}' is loopback`);
  for (const h of foreign) t.equal(isLoopbackHost(h), false, `'${h}' is not`);
});

/** What browserRefusal reads of a request: its method, two headers, and fastify's `host`. */
const request = (method: string, host: string, headers: Record<string, string> = {}): FastifyRequest =>
  ({ method, host, headers: { host, ...headers } }) as unknown as FastifyRequest;
const codeOf = (e: ReturnType<typeof browserRefusal>): string | null => (e === null ? null : `${e.status} ${e.code}`);
const FORBIDDEN = '403 TOLLGATE_ERR_FORBIDDEN';

t.test('writes a browser marks as from another origin are refused, keys or not; reads and clients without Origin pass', async (t) => {
  const host = 'gw.example.com';
  const cases: [method: string, headers: Record<string, string>, expected: string | null][] = [
    ['POST', {}, null], // an SDK, a CLI, curl
    ['PUT', {}, null],
    ['DELETE', {}, null],
    ['POST', { 'sec-fetch-site': 'same-origin' }, null], // the console
    ['POST', { 'sec-fetch-site': 'same-origin', origin: 'https://elsewhere.example' }, null], // Sec-Fetch-Site decides when sent
    ['POST', { 'sec-fetch-site': 'none' }, null], // the user's own action
    ['POST', { origin: `https://${host}` }, null], // an old browser, same origin
    ['POST', { origin: `http://${host}` }, null], // the scheme is not compared (a TLS proxy in front)
    ['POST', { 'sec-fetch-site': 'cross-site' }, FORBIDDEN],
    ['POST', { 'sec-fetch-site': 'same-site' }, FORBIDDEN], // a sibling subdomain, another port of localhost
    ['PATCH', { 'sec-fetch-site': 'same-site', origin: `https://${host}` }, FORBIDDEN],
    ['POST', { 'sec-fetch-site': 'bogus' }, FORBIDDEN],
    ['PUT', { origin: 'https://evil.example' }, FORBIDDEN],
    ['POST', { origin: `https://${host}:8443` }, FORBIDDEN], // another port: another origin
    ['POST', { origin: `https://${host}.evil.example` }, FORBIDDEN],
    ['POST', { origin: 'null' }, FORBIDDEN],
    ['POST', { origin: '' }, FORBIDDEN],
    ['DELETE', { origin: host }, FORBIDDEN], // not a serialized origin
    ['GET', { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, null], // the page cannot read the answer
    ['HEAD', { 'sec-fetch-site': 'cross-site' }, null],
    ['OPTIONS', { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, null], // a preflight: 404, no CORS
  ];
  for (const open of [false, true]) {
    for (const [method, headers, expected] of cases) {
      // Open mode only on a loopback name (the name itself is the next test's business).
      const e = browserRefusal(request(method, open ? 'localhost:4000' : host, open ? rehome(headers) : headers), open);
      t.equal(codeOf(e), expected, `${open ? 'open' : 'keys'}: ${method} ${JSON.stringify(headers)}`);
      if (e !== null) t.match(e.message, new RegExp(`^a ${method} from a web page on another origin \\(.*\\) is refused: only the console`), 'says why');
    }
  }
});

/** The same headers for a gateway at localhost:4000. */
function rehome(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.replaceAll('gw.example.com', 'localhost:4000').replace('localhost:4000:8443', 'localhost:8443')]));
}

t.test('open mode: the name the request was addressed to must be loopback, on every method', async (t) => {
  for (const method of ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']) {
    const rebound = browserRefusal(request(method, 'attacker.example:4000', { origin: 'http://attacker.example:4000', 'sec-fetch-site': 'same-origin' }), true);
    t.equal(codeOf(rebound), FORBIDDEN, `${method} as attacker.example`);
    t.match(rebound?.message, /^Host 'attacker\.example:4000' is not a loopback name: .* configure server\.api_keys/);
    t.equal(browserRefusal(request(method, 'attacker.example:4000'), false), null, `${method}: with keys the name is not looked at`);
    t.equal(browserRefusal(request(method, '127.0.0.1:4000'), true), null, `${method} as 127.0.0.1`);
  }
  // fastify's req.host: a trusted proxy's X-Forwarded-Host when server.trust_proxy lists the peer, else Host.
  const viaProxy = { method: 'GET', host: 'public.example', headers: { host: '127.0.0.1:4000', 'x-forwarded-host': 'public.example' } } as unknown as FastifyRequest;
  t.equal(codeOf(browserRefusal(viaProxy, true)), FORBIDDEN, 'a name a trusted proxy forwarded is checked');
  t.equal(browserRefusal(request('GET', ''), true), null, 'no Host at all (HTTP/1.0): not a browser');
  const long = browserRefusal(request('GET', `${'a'.repeat(5000)}.example`), true);
  t.ok(long !== null && long.message.length < 600, 'a long name is quoted shortened');
});
