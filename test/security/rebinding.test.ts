// What a web page can make a browser send to a gateway on the user's machine (src/gate/origin.ts), on a real socket
// with a real config file and a real webhook receiver. Open mode (no server.api_keys): a request addressed to a name
// that is not loopback, as a page sends it after rebinding its name to 127.0.0.1 (its Host and a matching Origin), is
// refused on every route, reads, writes, the data plane, export and the public list alike; the config file is left
// as it was, no notification goes out, no upstream call is made, nothing is recorded. A cross-site write (a CORS
// "simple" request: no preflight) is refused on a loopback Host too. Clients without Origin (SDKs, CLIs, curl: Node's
// fetch here) and the console's own same-origin writes keep working. With keys, a foreign Host is the keys' business,
// but a cross-site write is still refused, before the key is looked at.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { demoProvidersYaml, startApp, testConfig, type TestApp } from '../helpers/app.js';
import { exchange, send, type Answer } from '../helpers/raw-http.js';
import { receiver } from '../helpers/receivers.js';
import { tempDir } from '../helpers/tmp.js';

const SECRET = 'whsec-rebinding-test';
const KEY = 'k-rebinding-0123456789abcdef';
const hook = await receiver(t, SECRET);
const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = `# rebinding test: no server.api_keys (open, loopback only)
server:
  host: 127.0.0.1

storage:
  data_dir: ${join(dir, 'data')}
  batch: { flush_ms: 50 }

${demoProvidersYaml()}
budgets:
  daily_usd: 10

alerts:
  channels:
    dashboard: true
    webhook: { url: "${hook.url}", secret: ${SECRET} }
`;
writeFileSync(file, TEXT);
const raw = parse(TEXT) as Record<string, unknown>;
const gw: TestApp = await startApp(t, raw, { dataDir: join(dir, 'data'), configFile: file });
const port = new URL(gw.url).port;

const CHAT = JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] });
/** One request of each kind the review reproduced: a read, a config write, the data plane, export, the alert test. */
const REQUESTS: readonly { method: string; path: string; body?: string }[] = [
  { method: 'GET', path: '/api/usage/request-logs' },
  { method: 'GET', path: '/api/settings' },
  { method: 'PUT', path: '/api/settings/budgets', body: '{"daily_usd":123}' },
  { method: 'POST', path: '/v1/chat/completions', body: CHAT },
  { method: 'POST', path: '/api/admin/export', body: '{}' },
  { method: 'POST', path: '/api/alerts/test' },
  { method: 'GET', path: '/metrics' },
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/' },
];

/** The answer's JSON body; `{ not_json }` when it is not JSON (an export's archive, the console's page). */
function body(a: Answer): { error?: { code?: string; message?: string; type?: string; param?: unknown } } {
  try {
    return JSON.parse(a.body) as never;
  } catch {
    return { not_json: a.body.slice(0, 80) } as never;
  }
}
const requestRows = async (): Promise<number> => (await gw.rows()).length;

t.test('open mode: a request addressed to a name that is not loopback is refused on every route, in the error shape', async (t) => {
  const rowsBefore = await requestRows();
  const hosts = [
    `attacker.example:${port}`, 'attacker.example', `ATTACKER.example:${port}`, `0.0.0.0:${port}`, `192.168.1.5:${port}`, `10.0.0.1:${port}`,
    `localhost.:${port}`, `localhost.attacker.example:${port}`, `127.0.0.1.attacker.example:${port}`, `evil-localhost:${port}`, `.localhost:${port}`,
    `[::2]:${port}`, `[::ffff:7f00:1]:${port}`, `[::1]x`, `localhost:x${port}`, `127.0.0.1:${port}:80`, `127.1:${port}`,
  ];
  for (const host of hosts) {
    for (const r of REQUESTS) {
      // What a rebound page's fetch sends: its own name as Host and as Origin, and same-origin as the browser sees it.
      const a = await send(gw.url, r.method, r.path, { headers: { host, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' }, ...(r.body === undefined ? {} : { body: r.body }) });
      t.equal(a.status, 403, `${r.method} ${r.path} as Host '${host}': 403`);
      t.match(body(a), { error: { code: 'TOLLGATE_ERR_FORBIDDEN', type: 'permission_error', param: null, message: /^Host '.*' is not a loopback name: with no server\.api_keys .* configure server\.api_keys/ } }, `${r.method} ${r.path} as Host '${host}': why and how to allow it`);
    }
  }
  // Without an Origin too (a rebound page's navigation or <img>, or a tool): the name is what is refused.
  const bare = await send(gw.url, 'GET', '/api/usage/request-logs', { headers: { host: `attacker.example:${port}` } });
  t.equal(bare.status, 403, 'no Origin: still 403');
  t.equal(readFileSync(file, 'utf8'), TEXT, 'the config file is byte for byte as it was');
  t.equal(gw.holder.current.budgets.daily_usd, 10, 'the running budget is unchanged');
  t.equal(hook.got.length, 0, 'no test notification reached the webhook');
  t.equal(await requestRows(), rowsBefore, 'no request was served or recorded');
});

t.test('open mode: loopback names and addresses, with and without a port, are served', async (t) => {
  const hosts = ['localhost', `localhost:${port}`, `LocalHost:${port}`, `tollgate.localhost:${port}`, `a.b.localhost`, `127.0.0.1:${port}`, '127.0.0.1', `127.1.2.3:${port}`, `[::1]:${port}`, '[::1]'];
  for (const host of hosts) {
    const a = await send(gw.url, 'GET', '/api/usage/request-logs', { headers: { host } });
    t.equal(a.status, 200, `GET as Host '${host}'`);
    const w = await send(gw.url, 'POST', '/api/alerts/read', { headers: { host, origin: `http://${host}` }, body: '{"all":true}' });
    t.equal(w.status, 200, `a same-origin write as Host '${host}' (an Origin naming it, no Sec-Fetch-Site)`);
  }
  // HTTP/1.0 without a Host header: not a browser (a browser always sends one).
  const http10 = await exchange(Number(port), 'GET /api/usage/request-logs HTTP/1.0\r\n\r\n');
  t.equal(http10.status, 200, 'no Host header at all (HTTP/1.0)');
  t.equal(hook.got.length, 0);
});

t.test('cross-site writes are refused on a loopback Host: nothing written, sent, forwarded or recorded', async (t) => {
  const rowsBefore = await requestRows();
  const host = `127.0.0.1:${port}`;
  const marks: Record<string, string>[] = [
    { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'cross-site' },
    { origin: `http://localhost:5173`, 'sec-fetch-site': 'same-site' }, // another local dev server: same site, another origin
    { origin: 'http://evil.example' }, // a browser too old to send Sec-Fetch-Site
    { origin: 'null' }, // a sandboxed frame, a file:// page
    { origin: `https://${host}.evil.example` },
    { origin: `http://localhost:${port}` }, // same machine, another name: another origin
    { origin: `http://${host}`, 'sec-fetch-site': 'cross-site' }, // the Origin cannot vouch for what the browser says
  ];
  for (const headers of marks) {
    for (const r of REQUESTS.filter((x) => x.method !== 'GET')) {
      const a = await send(gw.url, r.method, r.path, { headers: { host, ...headers }, ...(r.body === undefined ? {} : { body: r.body }) });
      const label = `${r.method} ${r.path} with ${JSON.stringify(headers)}`;
      t.equal(a.status, 403, `${label}: 403`);
      t.match(body(a), { error: { code: 'TOLLGATE_ERR_FORBIDDEN', type: 'permission_error', message: /^a (POST|PUT) from a web page on another origin .* is refused: only the console/ } }, label);
    }
  }
  // The review's request exactly: a bodyless POST, as a form or fetch with no body sends it from any site.
  const alertTest = await send(gw.url, 'POST', '/api/alerts/test', { headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' } });
  t.equal(alertTest.status, 403);
  // Reads stay open to the loopback Host: a browser does not let the other site read the answer (no CORS headers).
  const read = await send(gw.url, 'GET', '/api/usage/request-logs', { headers: { host, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' } });
  t.equal(read.status, 200, 'a cross-site GET is answered');
  t.equal(read.headers['access-control-allow-origin'], undefined, 'with no CORS header, so the page cannot read it');
  t.equal(readFileSync(file, 'utf8'), TEXT, 'the config file is byte for byte as it was');
  t.equal(hook.got.length, 0, 'no test notification reached the webhook');
  t.equal(await requestRows(), rowsBefore, 'no request was forwarded or recorded');
});

t.test('clients without Origin (SDKs, CLIs: Node fetch) and the console\'s same-origin writes keep working', async (t) => {
  const chat = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT });
  t.equal(chat.status, 200, 'the data plane, as the OpenAI SDK sends it (fetch, no Origin)');
  await chat.arrayBuffer();
  const tested = await fetch(`${gw.url}/api/alerts/test`, { method: 'POST' });
  t.equal(tested.status, 200, 'a bodyless POST without Origin');
  t.match(await tested.json(), { results: [{ channel: 'dashboard', delivered: true }, { channel: 'webhook', delivered: true }] });
  t.equal(hook.got.length, 1, 'one test notification, from the one allowed request');
  const none = await send(gw.url, 'POST', '/api/alerts/read', { headers: { 'sec-fetch-site': 'none' }, body: '{"all":true}' });
  t.equal(none.status, 200, 'Sec-Fetch-Site: none (the user typed it) is allowed');
  // The console: same origin, as the browser marks it.
  const put = await send(gw.url, 'PUT', '/api/settings/budgets', { headers: { origin: gw.url, 'sec-fetch-site': 'same-origin' }, body: '{"daily_usd":123}' });
  t.equal(put.status, 200, 'the console\'s settings write');
  t.match(readFileSync(file, 'utf8'), /daily_usd: 123\n/, 'and it reached the file');
  t.equal(gw.holder.current.budgets.daily_usd, 123);
  t.ok((await requestRows()) >= 1, 'the chat request was recorded');
});

t.test('with keys: a foreign Host is the keys\' business; a cross-site write is refused before the key is read', async (t) => {
  gw.holder.replace(testConfig({ ...raw, server: { host: '127.0.0.1', api_keys: [{ name: 'admin', key: KEY }], rate_limit: { auth_failures_per_minute: 2 } } }, join(dir, 'data')));
  const auth = { authorization: `Bearer ${KEY}` };
  const keyed = await send(gw.url, 'GET', '/api/usage/request-logs', { headers: { host: `gw.example.com:${port}`, ...auth } });
  t.equal(keyed.status, 200, 'a foreign Host with a key is served (a tunnel, a proxy)');
  const unkeyed = await send(gw.url, 'GET', '/api/usage/request-logs', { headers: { host: `attacker.example:${port}`, origin: `http://attacker.example:${port}` } });
  t.equal(unkeyed.status, 401, 'a rebound page has no key');
  const hooks = hook.got.length;
  for (let i = 0; i < 6; i++) {
    const withKey = i % 2 === 0;
    const a = await send(gw.url, 'POST', '/api/alerts/test', { headers: { ...(withKey ? auth : {}), origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' } });
    t.equal(a.status, 403, `a cross-site POST ${withKey ? 'with a valid key' : 'without a key'}: 403 (${i + 1})`);
    t.match(body(a), { error: { code: 'TOLLGATE_ERR_FORBIDDEN', message: /another origin/ } });
  }
  t.equal(hook.got.length, hooks, 'nothing sent');
  // Refused as cross-site, not as a missing key: the wrong-key limit (2 a minute, one used above) was not reached.
  const ok = await fetch(`${gw.url}/api/alerts/read`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"all":true}' });
  t.equal(ok.status, 200, 'an SDK-style write with the key still works');
  const proxied = await send(gw.url, 'PUT', '/api/settings/budgets', { headers: { ...auth, host: `gw.example.com:${port}`, origin: `https://gw.example.com:${port}` }, body: '{"daily_usd":7}' });
  t.equal(proxied.status, 200, 'a same-origin write under a public name (an old browser: Origin only) is served');
});
