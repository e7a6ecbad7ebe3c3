// The settings API (src/api/settings.ts) on a real app and a real config file: edits land in the YAML with its
// comments, order and ${VAR} references; the result is validated by the config schema (400 naming the field, file
// untouched), applied live, guarded by the ETag (412), refused for env-fed values (409) and without a file (409).

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startApp, type TestApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = `# Settings test config
server:
  host: 127.0.0.1

storage:
  data_dir: ${join(dir, 'data')}
  batch: { flush_ms: 50 }

providers:
  demo:
    name: Demo
    group: paid
    format: mock
    price: { input: 1, output: 2, cached: 0.5 }   # per 1M tokens
    mock: { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }
    models:
      echo-1: { kind: llm }

budgets:
  daily_usd: 10        # the day's ceiling
  monthly_usd: "\${TG_TEST_MONTHLY:-200}"   # from the environment
  timezone: UTC

alerts:
  kinds:
    cost_anomaly: true
`;
writeFileSync(file, TEXT);
const gw: TestApp = await startApp(t, parse(TEXT.replace('${TG_TEST_MONTHLY:-200}', '200')) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}${path}`, {
    method, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, etag: res.headers.get('etag'), body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

t.test('GET /api/settings: the values that run, which come from ${VAR}, and the file ETag', async (t) => {
  const r = await call('GET', '/api/settings');
  t.equal(r.status, 200);
  t.match(r.etag, /^"[A-Za-z0-9_-]{32}"$/);
  t.equal(r.body.etag, r.etag);
  t.same(r.body.budgets, { daily_usd: 10, monthly_usd: 200, timezone: 'UTC', auto_switch: { enabled: false, to: null } });
  t.same(r.body.env_fed, ['budgets.monthly_usd']);
  t.same(r.body.alerts.thresholds, { quota: [80, 90], daily: [80, 100], monthly: [50, 80, 100], anomaly_multiple: 2 }, 'the schema defaults');
  t.same(r.body.prices.demo, { name: 'Demo', group: 'paid', price: { input: 1, output: 2, cached: 0.5 }, models: { 'echo-1': null } });
  t.same(r.body.switch_targets, ['demo/echo-1']);
});

t.test('PUT /api/settings/budgets edits the YAML in place and applies it', async (t) => {
  const { etag } = await call('GET', '/api/settings');
  const r = await call('PUT', '/api/settings/budgets', { daily_usd: 12.5, auto_switch: { enabled: true, to: 'demo/echo-1' } }, { 'if-match': etag! });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.not(r.etag, etag, 'a new ETag');
  const text = readFileSync(file, 'utf8');
  t.equal(
    text,
    TEXT.replace('daily_usd: 10        # the day', 'daily_usd: 12.5 # the day').replace('cached: 0.5 }   # per', 'cached: 0.5 } # per')
      .replace('"${TG_TEST_MONTHLY:-200}"   # from', '"${TG_TEST_MONTHLY:-200}" # from')
      .replace('  timezone: UTC\n', '  timezone: UTC\n  auto_switch:\n    enabled: true\n    to: demo/echo-1\n'),
    'a key added: the Document API keeps every comment (re-spaced before the #)',
  );
  t.equal(gw.holder.current.budgets.daily_usd, 12.5, 'applied live');
  t.same(gw.holder.current.budgets.auto_switch, { enabled: true, to: 'demo/echo-1' });
  const budgets = (await (await fetch(`${gw.url}/api/budgets`)).json()) as { daily: { limit: number } };
  t.equal(budgets.daily.limit, 12.5);
  t.equal((await call('GET', '/api/settings')).etag, r.etag, 'GET answers the same ETag');
  // null removes the key (and an emptied map with it)
  const back = await call('PUT', '/api/settings/budgets', { auto_switch: { enabled: null, to: null } });
  t.equal(back.status, 200);
  t.notMatch(readFileSync(file, 'utf8'), /auto_switch/);
  t.equal(gw.holder.current.budgets.auto_switch.enabled, false);
  // A value replaced in place: not one other byte of the file changes.
  const before = readFileSync(file, 'utf8');
  t.equal((await call('PUT', '/api/settings/budgets', { daily_usd: 12.5, timezone: 'UTC' })).status, 200);
  t.equal(readFileSync(file, 'utf8'), before, 'the same values: the same bytes');
  t.equal((await call('PUT', '/api/settings/budgets', { daily_usd: 11 })).status, 200);
  t.equal(readFileSync(file, 'utf8'), before.replace('daily_usd: 12.5 #', 'daily_usd: 11 #'));
  t.equal((await call('PUT', '/api/settings/budgets', { daily_usd: 12.5 })).status, 200);
});

t.test('an invalid value: 400 naming the field, the file untouched, the config unchanged', async (t) => {
  const before = readFileSync(file, 'utf8');
  const r = await call('PUT', '/api/settings/budgets', { daily_usd: -5 });
  t.equal(r.status, 400);
  t.match(r.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'budgets.daily_usd', message: /^budgets\.daily_usd: .*>= 0/ });
  const target = await call('PUT', '/api/settings/budgets', { auto_switch: { enabled: true } });
  t.equal(target.status, 400);
  t.match(target.body.error, { param: 'budgets.auto_switch.to', message: /is required when auto_switch is enabled/ });
  const price = await call('PUT', '/api/settings/prices/demo', { price: { output: -1 } });
  t.match(price.body.error, { param: 'providers.demo.price.output' });
  const threshold = await call('PUT', '/api/settings/alerts', { thresholds: { quota: [80, 150] } });
  t.equal(threshold.status, 400);
  t.match(threshold.body.error, { param: 'alerts.thresholds.quota[1]' });
  const shape = await call('PUT', '/api/settings/budgets', { daily_usd: 'lots' });
  t.equal(shape.status, 400, 'a body of the wrong shape');
  t.equal(readFileSync(file, 'utf8'), before, 'file untouched');
  t.equal(gw.holder.current.budgets.daily_usd, 12.5);
});

t.test('a stale If-Match is 412; a value from ${VAR} is 409; both leave the file alone', async (t) => {
  const before = readFileSync(file, 'utf8');
  const stale = await call('PUT', '/api/settings/budgets', { daily_usd: 1 }, { 'if-match': '"not-the-etag"' });
  t.equal(stale.status, 412);
  t.equal(stale.body.error.code, 'TOLLGATE_ERR_PRECONDITION_FAILED');
  const fed = await call('PUT', '/api/settings/budgets', { monthly_usd: 50 });
  t.equal(fed.status, 409);
  t.match(fed.body.error, { code: 'TOLLGATE_ERR_CONFIG_CONFLICT', param: 'budgets.monthly_usd', message: /environment variable/ });
  t.equal(readFileSync(file, 'utf8'), before);
});

t.test('PUT /api/settings/prices/:provider: the new price prices the next request', async (t) => {
  const r = await call('PUT', '/api/settings/prices/demo', { price: { input: 3, cached: null }, models: { 'echo-1': { output: 4 } } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  const text = readFileSync(file, 'utf8');
  t.match(text, /price: \{ input: 3, output: 2 \} # per 1M tokens/, 'the flow map edited in place, its comment kept');
  t.match(text, /echo-1: \{ kind: llm, price: \{ output: 4 \} \}/);
  t.same(r.body.prices.demo.price, { input: 3, output: 2 });
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(res.status, 200);
  await res.text();
  const [row] = await gw.rows();
  const input = Number(row!.input_tokens);
  const output = Number(row!.output_tokens);
  t.ok(input > 0 && output > 0);
  t.equal(Number(row!.cost), Number(((input * 3 + output * 4) / 1e6).toFixed(9)), 'priced at input 3, output 4 (the model override)');
  t.equal((await call('PUT', '/api/settings/prices/nope', { price: { input: 1 } })).status, 404);
  t.equal((await call('PUT', '/api/settings/prices/demo', { models: { 'no-such-model': { input: 1 } } })).status, 404);
});

t.test('PUT /api/settings/alerts: switches and thresholds, applied to the evaluator\'s config', async (t) => {
  const r = await call('PUT', '/api/settings/alerts', { kinds: { cost_anomaly: false, quota_reset: false }, channels: { dashboard: false }, thresholds: { daily: [50, 100], anomaly_multiple: 3 } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.same(gw.holder.current.alerts.thresholds, { quota: [80, 90], daily: [50, 100], monthly: [50, 80, 100], anomaly_multiple: 3 });
  t.equal(gw.holder.current.alerts.kinds.cost_anomaly, false);
  t.equal(gw.holder.current.alerts.channels.dashboard, false);
  const text = readFileSync(file, 'utf8');
  t.match(text, /kinds:\n {4}cost_anomaly: false\n {4}quota_reset: false/);
  t.match(text, /thresholds:\n {4}daily: \[ 50, 100 \]\n {4}anomaly_multiple: 3/);
  t.ok(text.startsWith('# Settings test config\n'));
});

// The bodies are checked by fastify's own validator compiler, strictly (no coercion, no key dropped), compiled on the
// first request that needs it rather than at start (core/lazy-validator.ts); the 400 names the field at its config path.
t.test('the body schemas: type errors and unknown keys are 400s naming the field, nothing coerced or dropped', async (t) => {
  const before = readFileSync(file, 'utf8');
  const shape = await call('PUT', '/api/settings/alerts', { thresholds: { quota: 'x' }, channels: { dashboard: 'maybe' } });
  t.equal(shape.status, 400);
  t.match(shape.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', message: /^alerts\.(thresholds\.quota: expected array|channels\.dashboard: expected boolean or null)$/ });
  const prices = await call('PUT', '/api/settings/prices/demo', { price: { input: 'cheap' } });
  t.equal(prices.status, 400, 'a price body of the wrong type');
  const extra = await call('PUT', '/api/settings/budgets', { daily_usd: '11', no_such_key: 1 });
  t.equal(extra.status, 400, 'a numeric string is not coerced (nor an unknown key dropped)');
  t.match(extra.body.error.param, /^budgets\.(daily_usd|no_such_key)$/);
  t.equal(readFileSync(file, 'utf8'), before, 'file untouched');
});
