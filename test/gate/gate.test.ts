// The gate (src/gate): authorisation on the route fastify matched, deny by default, roles, the public list,
// metrics_auth, and the two per-client-IP limits (wrong keys, requests per minute) keyed by the real client IP.
// Requests go over real sockets with raw paths (node:http sends the path as written), from different loopback
// addresses (127.0.0.2, 127.0.0.3: Linux routes all of 127/8 to lo) to be different clients.

import t from 'tap';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import type { Config } from '../../src/config/types.js';
import { errorCode, send } from '../helpers/raw-http.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { metricValue } from '../helpers/prom.js';
import { REAUTH_ROUTES } from '../../src/gate/index.js';

const KEY = 'k-admin-0123456789abcdef';
const USER_KEY = 'k-user-0123456789abcdef';

/** A concrete path for a route pattern. */
const GEMINI_PATHS: Record<string, string> = { '/v1beta/*': '/v1beta/models/demo/echo-1:generateContent', '/v1/*': '/v1/demo/echo-1:streamGenerateContent' };
const concrete = (url: string): string => GEMINI_PATHS[url] ?? url.replace(/:\w+/g, 'x').replace('*', 'x');

/** Ways to write `path` that a naive prefix check on the raw URL would not see as the same route. */
function encodings(path: string): string[] {
  const out = new Set<string>();
  const hex = (c: string) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (!/[A-Za-z0-9]/.test(c)) continue;
    out.add(path.slice(0, i) + hex(c).toUpperCase() + path.slice(i + 1));
    out.add(path.slice(0, i) + hex(c).toLowerCase() + path.slice(i + 1));
    if (i < 12) out.add(path.slice(0, i) + `%25${hex(c).slice(1)}` + path.slice(i + 1)); // double encoding
  }
  const [first, ...rest] = path.slice(1).split('/');
  const tail = rest.join('/');
  out.add(path);
  out.add(`/${path}`);
  out.add(`/${first}//${tail}`);
  out.add(`/./${first}/${tail}`);
  out.add(`/${first}/./${tail}`);
  out.add(`/x/../${first}/${tail}`);
  out.add(`/%2e/${first}/${tail}`);
  out.add(`/${first}%2f${tail}`);
  out.add(`/${first}%c0%af${tail}`); // overlong UTF-8 '/'
  out.add(`/${first}%e0%80%af${tail}`);
  out.add(`${path}/`);
  out.add(path.toUpperCase());
  out.add(`/${first!.toUpperCase()}/${tail}`);
  out.add(`/${first};x=1/${tail}`);
  out.add(`${path};jsessionid=1`);
  out.add(`${path}?x=1`);
  out.add(`${path}#frag`);
  out.add(`/${first}/${tail}%00`);
  out.add(`/${first}/${tail}%20`);
  return [...out];
}

const up = await startFakeOpenAI(t);
const gw: TestApp = await startApp(t, {
  server: { api_keys: [{ name: 'admin', key: KEY, role: 'admin' }, { name: 'user', key: USER_KEY }], rate_limit: { auth_failures_per_minute: 1_000_000 } },
  providers: { demo: DEMO_PROVIDER, open: fakeProvider(up.baseUrl) },
});

t.test('every route but the public list answers 401 without a key, however its path is written', async (t) => {
  const routes = gw.app.tollgate.routes.filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS');
  const urls = routes.map((r) => r.url);
  for (const expected of ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1beta/*', '/v1/*', '/v1/models', '/api/usage', '/api/quota', '/api/admin/reauth', '/api/admin/export', '/api/admin/import', '/metrics', '/health', '/ready', '/api/live', '/api/settings', '/api/settings/budgets', '/api/version', '/api/tunnel', '/console/*']) {
    t.ok(urls.includes(expected), `${expected} is a registered route`);
  }
  let probes = 0;
  const leaks: string[] = [];
  for (const r of routes) {
    if (['/', '/console/*', '/console/auth', '/health', '/ready', '/metrics'].includes(r.url)) continue;
    for (const path of encodings(concrete(r.url))) {
      const a = await send(gw.url, r.method, path, r.method === 'GET' ? {} : { body: '{"model":"open/gpt-4o","messages":[{"role":"user","content":"hi"}],"contents":[{"parts":[{"text":"hi"}]}]}' });
      probes++;
      if (a.status === 400 && errorCode(a) === 'TOLLGATE_ERR_BAD_REQUEST') continue; // the URL itself is refused before routing
      // a path that still matches export or import is refused for want of a re-authentication token
      const refusals = REAUTH_ROUTES.has(r.url) ? ['TOLLGATE_ERR_UNAUTHORIZED', 'TOLLGATE_ERR_REAUTH_REQUIRED'] : ['TOLLGATE_ERR_UNAUTHORIZED'];
      if (a.status !== 401 || !refusals.includes(errorCode(a) as string)) leaks.push(`${r.method} ${path} -> ${a.status} ${String(errorCode(a))}`);
    }
  }
  t.same(leaks, [], `${probes} probes on ${routes.length - 6} routes: all refused`);
  t.ok(probes > 500, `${probes} probes`);
  t.equal(up.received.length, 0, 'the upstream was never called');
  t.same(await gw.rows(), [], 'refused probes are not recorded as requests');
});

t.test('the reported bypasses are closed; the same requests work with a key', async (t) => {
  const body = '{"model":"open/gpt-4o","messages":[{"role":"user","content":"hi"}]}';
  const gemini = '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}';
  const cases: [string, string, string | undefined][] = [
    ['GET', '/%61pi/usage', undefined],
    ['GET', '/%761/models', undefined],
    ['POST', '/%76%31/chat/completions', body],
    ['POST', '/%76%31beta/models/demo/echo-1:generateContent', gemini],
  ];
  for (const [method, path, b] of cases) {
    const open = await send(gw.url, method, path, { body: b });
    t.equal(open.status, 401, `${method} ${path} without a key`);
    t.equal(errorCode(open), 'TOLLGATE_ERR_UNAUTHORIZED');
    const keyed = await send(gw.url, method, path, { body: b, headers: { authorization: `Bearer ${USER_KEY}` } });
    t.equal(keyed.status, 200, `${method} ${path} with a key: ${keyed.body.slice(0, 120)}`);
  }
  t.equal(up.received.length, 1, 'only the keyed chat request reached the upstream');
});

t.test('the public list: /, the console\'s files, /health, /ready and /metrics need no key', async (t) => {
  for (const path of ['/', '/console/app.js', '/console/app.css', '/health', '/ready', '/metrics']) t.equal((await send(gw.url, 'GET', path)).status, 200, path);
  t.equal((await send(gw.url, 'HEAD', '/')).status, 200, 'HEAD / (Claude Code probes it)');
  t.same(Object.keys(JSON.parse((await send(gw.url, 'GET', '/')).body) as object), ['name', 'version'], '/ tells a client that is not a browser the name and version only');
  const page = await send(gw.url, 'GET', '/', { headers: { accept: 'text/html' } });
  t.equal(page.status, 200);
  t.match(page.body, /<script type="module" src="\/console\/app.js">/, 'a browser gets the console page');
  t.same(JSON.parse((await send(gw.url, 'GET', '/console/auth')).body), { keys_required: true }, 'the console learns it must ask for a key');
  const missing = await send(gw.url, 'GET', '/console/no-such-file.js');
  t.equal(missing.status, 404, 'a console file that does not exist: 404');
  t.equal((await send(gw.url, 'GET', '/console/../config.yaml')).status === 200, false, 'nothing outside dist/console');
  const unknown = await send(gw.url, 'GET', '/no/such/route');
  t.equal(unknown.status, 401, 'an unknown path without a key: 401, not 404 (nothing is learned about what exists)');
  const known = await send(gw.url, 'GET', '/no/such/route', { headers: { authorization: `Bearer ${USER_KEY}` } });
  t.equal(known.status, 404, 'with a key: 404');
  t.equal(errorCode(known), 'TOLLGATE_ERR_NOT_FOUND');
});

t.test('keys as each SDK sends them; a wrong key is refused', async (t) => {
  for (const headers of [{ authorization: `Bearer ${USER_KEY}` }, { 'x-api-key': USER_KEY }, { 'x-goog-api-key': USER_KEY }] as Record<string, string>[]) {
    t.equal((await send(gw.url, 'GET', '/v1/models', { headers })).status, 200, Object.keys(headers)[0]!);
  }
  t.equal((await send(gw.url, 'GET', `/v1/models?key=${USER_KEY}`)).status, 200, '?key=');
  const wrong = await send(gw.url, 'GET', '/v1/models', { headers: { authorization: `Bearer ${USER_KEY}x` } });
  t.equal(wrong.status, 401);
  t.match(JSON.parse(wrong.body), { error: { code: 'TOLLGATE_ERR_UNAUTHORIZED', message: 'invalid API key', type: 'authentication_error', param: null } });
});

t.test('roles: /api/admin/* needs an admin key; a user key reads everything else', async (t) => {
  const asUser = await send(gw.url, 'POST', '/api/admin/reauth', { headers: { authorization: `Bearer ${USER_KEY}` } });
  t.equal(asUser.status, 403);
  t.match(JSON.parse(asUser.body), { error: { code: 'TOLLGATE_ERR_FORBIDDEN', type: 'permission_error' } });
  t.match(asUser.body, /key 'user' has role user/);
  const asAdmin = await send(gw.url, 'POST', '/api/admin/reauth', { headers: { authorization: `Bearer ${KEY}` } });
  t.equal(asAdmin.status, 200);
  const token = JSON.parse(asAdmin.body) as { token: string; key: string; expires_in_s: number; expires_at: string };
  t.match(token, { key: 'admin', expires_in_s: 300 });
  t.match(token.token, /^tgr_[A-Za-z0-9_-]{43}$/);
  t.ok(Math.abs(Date.parse(token.expires_at) - Date.now() - 300_000) < 5_000, 'expires in 5 minutes');
  for (const path of ['/api/usage', '/api/quota', '/api/alerts', '/api/budgets', '/v1/models', '/api/version', '/api/tunnel']) {
    t.equal((await send(gw.url, 'GET', path, { headers: { authorization: `Bearer ${USER_KEY}` } })).status, 200, `user key: ${path}`);
  }
  for (const [method, path] of [['GET', '/api/settings'], ['PUT', '/api/settings/budgets']]) {
    const refused = await send(gw.url, method!, path!, { headers: { authorization: `Bearer ${USER_KEY}`, 'content-type': 'application/json' }, body: method === 'PUT' ? '{}' : undefined });
    t.equal(refused.status, 403, `user key: ${method} ${path} is admin-only`);
  }
  t.equal((await send(gw.url, 'GET', '/api/settings', { headers: { authorization: `Bearer ${KEY}` } })).status, 200, 'admin key: GET /api/settings');
});

/** Apply `server` changes live (the gate reads keys and limits from the current config) until the subtest ends. */
function withServer(t: { teardown(fn: () => unknown): void }, server: Partial<Config['server']>): void {
  const cfg = gw.holder.current;
  gw.holder.replace({ ...cfg, server: { ...cfg.server, ...server } });
  t.teardown(() => gw.holder.replace(cfg));
}

t.test('when no key names a role, every key is an admin', async (t) => {
  withServer(t, { api_keys: [{ name: 'only', key: KEY }, { name: 'second', key: USER_KEY }] });
  for (const [key, name] of [[KEY, 'only'], [USER_KEY, 'second']] as const) {
    const a = await send(gw.url, 'POST', '/api/admin/reauth', { headers: { authorization: `Bearer ${key}` } });
    t.equal(a.status, 200, a.body);
    t.equal((JSON.parse(a.body) as { key: string }).key, name);
  }
});

t.test('server.metrics_auth: true puts /metrics behind a key (live)', async (t) => {
  withServer(t, { metrics_auth: true });
  t.equal((await send(gw.url, 'GET', '/metrics')).status, 401);
  const keyed = await send(gw.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${USER_KEY}` } });
  t.equal(keyed.status, 200);
  t.match(keyed.body, /tollgate_rate_limited_total/);
  t.notMatch(keyed.body, KEY, 'no key in the metrics');
  t.notMatch(keyed.body, 'sk-upstream-secret-123', 'no upstream key in the metrics');
});

t.test('wrong keys: the client IP is blocked after auth_failures_per_minute; other IPs and the right key elsewhere are not', async (t) => {
  withServer(t, { rate_limit: { requests_per_minute: 0, auth_failures_per_minute: 5 } });
  const g = gw;
  const before = await g.metrics();
  const wrong = { authorization: 'Bearer guess-0000000000000000' };
  for (let i = 0; i < 5; i++) t.equal((await send(g.url, 'GET', '/v1/models', { headers: wrong, from: '127.0.0.2' })).status, 401, `failure ${i + 1}: 401`);
  const blocked = await send(g.url, 'GET', '/v1/models', { headers: wrong, from: '127.0.0.2' });
  t.equal(blocked.status, 429, 'the sixth wrong key: 429');
  t.match(JSON.parse(blocked.body), { error: { code: 'TOLLGATE_ERR_RATE_LIMITED', type: 'rate_limit_error', param: null } });
  t.match(blocked.body, /auth_failures_per_minute is 5/);
  const retry = Number(blocked.headers['retry-after']);
  t.ok(retry > 0 && retry <= 60, `Retry-After ${retry}`);
  t.equal(blocked.headers['ratelimit-limit'], '5');
  t.equal(blocked.headers['ratelimit-remaining'], '0');
  t.equal(Number(blocked.headers['ratelimit-reset']), retry);
  const rightKeySameIp = await send(g.url, 'GET', '/v1/models', { headers: { authorization: `Bearer ${KEY}` }, from: '127.0.0.2' });
  t.equal(rightKeySameIp.status, 429, 'the blocked IP stays blocked even with the right key (no guessing through the block)');
  const missing = await send(g.url, 'GET', '/api/usage', { from: '127.0.0.2' });
  t.equal(missing.status, 429, 'on every keyed route');
  t.equal((await send(g.url, 'GET', '/health', { from: '127.0.0.2' })).status, 200, 'the public list stays open');
  const other = await send(g.url, 'GET', '/v1/models', { headers: { authorization: `Bearer ${KEY}` }, from: '127.0.0.3' });
  t.equal(other.status, 200, 'a client with the right key on another IP is never locked out by these failures');
  const spoofed = await send(g.url, 'GET', '/v1/models', { headers: { ...wrong, 'x-forwarded-for': '198.51.100.7' }, from: '127.0.0.2' });
  t.equal(spoofed.status, 429, 'X-Forwarded-For from an untrusted peer gives no fresh allowance');
  const m = await g.metrics();
  const counted = (text: string, reason: string) => metricValue(text, 'tollgate_rate_limited_total', { reason });
  t.equal(counted(m, 'auth_failures') - counted(before, 'auth_failures'), 4, 'four refusals counted');
  t.equal(counted(m, 'requests'), 0);
});

t.test('requests_per_minute limits each client IP on /v1 and /api, not the public list', async (t) => {
  withServer(t, { rate_limit: { requests_per_minute: 3, auth_failures_per_minute: 10 } });
  const g = gw;
  const rowsBefore = (await g.rows()).length;
  const auth = { authorization: `Bearer ${KEY}` };
  const seen: number[] = [];
  for (let i = 0; i < 3; i++) {
    const a = await send(g.url, 'GET', i === 1 ? '/api/usage' : '/v1/models', { headers: auth, from: '127.0.0.4' });
    seen.push(a.status);
    t.equal(a.headers['ratelimit-remaining'], String(2 - i), `request ${i + 1}: RateLimit-Remaining`);
  }
  t.same(seen, [200, 200, 200]);
  const over = await send(g.url, 'POST', '/v1/chat/completions', { headers: auth, from: '127.0.0.4', body: '{"model":"demo/echo-1","messages":[{"role":"user","content":"hi"}]}' });
  t.equal(over.status, 429);
  t.match(JSON.parse(over.body), { error: { code: 'TOLLGATE_ERR_RATE_LIMITED', type: 'rate_limit_error' } });
  t.match(over.body, /more than 3 requests per minute/);
  t.ok(Number(over.headers['retry-after']) > 0, 'Retry-After');
  t.equal(over.headers['ratelimit-limit'], '3');
  t.equal(over.headers['ratelimit-remaining'], '0');
  t.equal((await send(g.url, 'GET', '/health', { from: '127.0.0.4' })).status, 200, '/health is not limited');
  t.equal((await send(g.url, 'GET', '/metrics', { from: '127.0.0.4' })).status, 200, '/metrics is not limited');
  t.equal((await send(g.url, 'GET', '/v1/models', { headers: auth, from: '127.0.0.5' })).status, 200, 'another IP has its own allowance');
  t.equal(metricValue(await g.metrics(), 'tollgate_rate_limited_total', { reason: 'requests' }), 1);
  t.equal((await g.rows()).length, rowsBefore, 'a limited request is not recorded (it never reached a handler)');
});

t.test('requests_per_minute: off adds no limit headers; on, it counts requests let in without keys too, not unmatched paths', async (t) => {
  withServer(t, { rate_limit: { requests_per_minute: 0, auth_failures_per_minute: 10 } });
  const auth = { authorization: `Bearer ${KEY}` };
  for (let i = 0; i < 4; i++) {
    const a = await send(gw.url, 'GET', '/v1/models', { headers: auth, from: '127.0.0.6' });
    t.equal(a.status, 200, `off: request ${i + 1} served`);
    t.equal(a.headers['ratelimit-limit'], undefined, `off: request ${i + 1} carries no RateLimit-Limit`);
  }
  // Live: no keys (loopback), the limit at 2.
  withServer(t, { api_keys: [], rate_limit: { requests_per_minute: 2, auth_failures_per_minute: 10 } });
  const first = await send(gw.url, 'GET', '/v1/models', { from: '127.0.0.7' });
  t.equal(first.status, 200);
  t.equal(first.headers['ratelimit-remaining'], '1');
  const unmatched = await send(gw.url, 'GET', '/v1/no-such-route', { from: '127.0.0.7' });
  t.equal(unmatched.status, 404);
  t.equal(unmatched.headers['ratelimit-limit'], undefined, 'an unmatched path is not counted');
  const second = await send(gw.url, 'GET', '/v1/models', { from: '127.0.0.7' });
  t.equal(second.status, 200);
  t.equal(second.headers['ratelimit-remaining'], '0');
  const third = await send(gw.url, 'GET', '/api/usage', { from: '127.0.0.7' });
  t.equal(third.status, 429, 'the third request let in within the minute');
  t.equal(errorCode(third), 'TOLLGATE_ERR_RATE_LIMITED');
  t.equal((await send(gw.url, 'GET', '/health', { from: '127.0.0.7' })).status, 200, 'the public list is not limited');
});
