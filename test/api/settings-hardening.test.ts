// The settings API (src/api/settings.ts) against what a client or the file on disk can throw at it, on a real app
// and a real config file:
// - a client string holding `${` is refused (the loader would expand it from the environment), and no message of
//   the routes shows a value the loader took from the environment;
// - the bodies are validated strictly: an unknown key or a wrong type is a 400 naming the field, nothing coerced;
// - a file on disk that cannot be edited (gone, not clean YAML, an alias bomb, not a valid config) is a 409 saying
//   why, GET says it is not writable, the file is untouched;
// - an edit that goes through a YAML alias changes only the entry it is for.

import t from 'tap';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { configFileText, demoProvidersYaml, startApp, type TestApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const SECRET = 'S3CRET-sk-live-do-not-echo-0123456789';
process.env.TG_HARDENING_SECRET = SECRET;

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = configFileText(join(dir, 'data'), `${demoProvidersYaml()}  demo2:
    name: Demo2
    group: paid
    format: mock
    price: { input: 1, output: 2 }
    mock: { chunks: 2, latency_ms: 0, chunk_delay_ms: 0 }
    models: { echo-2: { kind: llm } }
budgets:
  daily_usd: 10
  timezone: UTC
`);
writeFileSync(file, TEXT);
const gw: TestApp = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${gw.url}${path}`, {
    method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

t.beforeEach(() => writeFileSync(file, TEXT));

t.test('a client string holding ${ is a 400 naming the field; nothing of the environment is written or shown', async (t) => {
  for (const [body, param] of [
    [{ auto_switch: { to: '${TG_HARDENING_SECRET}' } }, 'budgets.auto_switch.to'],
    [{ timezone: '${TG_HARDENING_SECRET}' }, 'budgets.timezone'],
    [{ timezone: 'Europe/${TG_HARDENING_SECRET:-Paris}' }, 'budgets.timezone'],
  ] as const) {
    const r = await call('PUT', '/api/settings/budgets', body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.match(r.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param, message: /may not contain "\$\{"/ });
    t.notOk(r.text.includes(SECRET), 'the value of the variable is not in the answer');
  }
  t.equal(readFileSync(file, 'utf8'), TEXT, 'file untouched');
  t.equal(gw.holder.current.budgets.auto_switch.to, undefined, 'nothing applied');
  const get = await call('GET', '/api/settings');
  t.notOk(get.text.includes(SECRET));
});

t.test('a file whose own ${VAR} value is invalid: the answer does not quote the value', async (t) => {
  const edited = TEXT.replace('timezone: UTC', 'timezone: "${TG_HARDENING_SECRET}"');
  writeFileSync(file, edited);
  const r = await call('PUT', '/api/settings/budgets', { daily_usd: 3 });
  t.equal(r.status, 409, 'the file does not load as it is: not the request\'s fault');
  t.match(r.body.error, { code: 'TOLLGATE_ERR_CONFIG_CONFLICT', message: /budgets\.timezone: / });
  t.match(r.body.error.message, /\$\{TG_HARDENING_SECRET\}/, 'the variable named instead of its value');
  t.notOk(r.text.includes(SECRET.slice(0, 12)), 'no part of the value of the variable');
  t.equal(readFileSync(file, 'utf8'), edited, 'file untouched');
});

t.test('the bodies are strict: an unknown key or a wrong type is a 400 naming the field', async (t) => {
  for (const [path, body, param] of [
    ['/api/settings/budgets', { dailyUsd: 50 }, 'budgets.dailyUsd'],
    ['/api/settings/budgets', { daily_usd: false }, 'budgets.daily_usd'],
    ['/api/settings/budgets', { daily_usd: '' }, 'budgets.daily_usd'],
    ['/api/settings/budgets', { daily_usd: '5' }, 'budgets.daily_usd'],
    ['/api/settings/budgets', { auto_switch: { enabled: 'false' } }, 'budgets.auto_switch.enabled'],
    ['/api/settings/prices/demo', { price: { inptu: 9 } }, 'providers.demo.price.inptu'],
    ['/api/settings/prices/demo', { price: { input: '' } }, 'providers.demo.price.input'],
    ['/api/settings/prices/demo', { models: { 'echo-1': { output: true } } }, 'providers.demo.models.echo-1.price.output'],
    ['/api/settings/prices/demo', { model: { 'echo-1': { input: 1 } } }, 'providers.demo.model'],
    ['/api/settings/alerts', { thresholds: { qouta: [50] } }, 'alerts.thresholds.qouta'],
    ['/api/settings/alerts', { thresholds: { quota: ['50'] } }, 'alerts.thresholds.quota[0]'],
    ['/api/settings/alerts', { kinds: { cost_anomoly: false } }, 'alerts.kinds.cost_anomoly'],
  ] as const) {
    const r = await call('PUT', path, body);
    t.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
    t.match(r.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param, message: new RegExp(`^${param.replace(/[.[\]]/g, '\\$&')}: (unknown key|expected )`) });
  }
  t.equal(readFileSync(file, 'utf8'), TEXT, 'file untouched');
  t.equal(gw.holder.current.budgets.daily_usd, 10, 'the budget unchanged');
  t.equal(gw.holder.current.providers.demo!.price!.input, 1, 'the price unchanged');

  const ok = await call('PUT', '/api/settings/budgets', { daily_usd: 20, monthly_usd: null, auto_switch: { enabled: false } });
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.equal(ok.body.budgets.daily_usd, 20, 'a valid body still works');
  const price = await call('PUT', '/api/settings/prices/demo', { price: { input: 3, cached: null }, models: { 'echo-1': { output: 4 } } });
  t.equal(price.status, 200, JSON.stringify(price.body));
  t.same(price.body.prices.demo.price, { input: 3, output: 2 });
  t.same(price.body.prices.demo.models['echo-1'], { output: 4 });
  t.equal((await call('PUT', '/api/settings/prices/demo', { price: null, models: { 'echo-1': null } })).status, 200, 'null removes');
  const alerts = await call('PUT', '/api/settings/alerts', { kinds: { cost_anomaly: false }, thresholds: { quota: [70, 90] } });
  t.equal(alerts.status, 200, JSON.stringify(alerts.body));
});

t.test('a file on disk that cannot be edited: a 409 saying why, GET not writable, the file untouched', async (t) => {
  const bomb = `\nx0: &a0 [1,1,1,1,1,1,1,1,1,1]\n${Array.from({ length: 8 }, (_, i) => `x${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(',')}]`).join('\n')}\n`;
  for (const [what, text, reason] of [
    ['a duplicate key', TEXT.replace('budgets:\n', 'budgets:\n  daily_usd: 1\n'), /line \d+: YAML syntax: Map keys must be unique/],
    ['a bad indent', TEXT.replace('  timezone: UTC', '  timezone: UTC\n   bad: indent'), /line \d+: YAML syntax: /],
    ['an alias bomb', TEXT + bomb, /Excessive alias count/],
    ['not a valid config', TEXT.replace('daily_usd: 10', 'daily_usd: -1'), /not a valid config \(budgets\.daily_usd: /],
  ] as const) {
    writeFileSync(file, text);
    const r = await call('PUT', '/api/settings/budgets', { monthly_usd: 5 });
    t.equal(r.status, 409, what);
    t.match(r.body.error, { code: 'TOLLGATE_ERR_CONFIG_CONFLICT', param: null, message: /^the config file on disk cannot be edited: / }, what);
    t.match(r.body.error.message, reason, what);
    t.equal(readFileSync(file, 'utf8'), text, `${what}: file untouched`);
  }
  writeFileSync(file, TEXT.replace('budgets:\n', 'budgets:\n  daily_usd: 1\n'));
  const get = await call('GET', '/api/settings');
  t.equal(get.status, 200);
  t.match(get.body, { writable: false, file_error: /Map keys must be unique/, budgets: { daily_usd: 20 } }, 'the running settings, not writable');

  writeFileSync(file, TEXT);
  renameSync(file, `${file}.moved`);
  t.teardown(() => renameSync(`${file}.moved`, file));
  const gone = await call('GET', '/api/settings');
  t.equal(gone.status, 200, 'GET with the file moved away');
  t.match(gone.body, { writable: false, etag: null, file_error: /cannot be read \(ENOENT/ });
  const put = await call('PUT', '/api/settings/budgets', { daily_usd: 5 });
  t.equal(put.status, 409);
  t.match(put.body.error, { code: 'TOLLGATE_ERR_CONFIG_CONFLICT', message: /cannot be read \(ENOENT/ });
  t.equal(gw.holder.current.budgets.daily_usd, 20, 'the running settings unchanged');
});

t.test('an edit through a YAML alias changes only the entry it is for', async (t) => {
  const shared = TEXT.replace('price: { input: 1, output: 2 }', 'price: &p { input: 1, output: 2 }').replace(/(demo2:[\s\S]*?)price: \{ input: 1, output: 2 \}/, '$1price: *p');
  t.ok(shared.includes('price: *p'));
  writeFileSync(file, shared);
  const price = (id: string) => (parse(readFileSync(file, 'utf8')) as { providers: Record<string, { price: unknown }> }).providers[id]!.price;
  const r2 = await call('PUT', '/api/settings/prices/demo2', { price: { input: 5 } });
  t.equal(r2.status, 200, r2.text.slice(0, 300));
  t.same(price('demo2'), { input: 5, output: 2 });
  t.same(price('demo'), { input: 1, output: 2 }, 'demo keeps its price');
  writeFileSync(file, shared);
  const r1 = await call('PUT', '/api/settings/prices/demo', { price: { input: 7 } });
  t.equal(r1.status, 200, r1.text.slice(0, 300));
  t.same(r1.body.prices.demo2.price, { input: 1, output: 2 }, 'demo2 keeps its price (running)');
  t.same(price('demo2'), { input: 1, output: 2 }, 'and in the file');
  t.same(price('demo'), { input: 7, output: 2 });
});

t.test('a config file nobody may write (mode 0444) is left as it is: a 409 saying so', async (t) => {
  const { chmodSync, statSync } = await import('node:fs');
  chmodSync(file, 0o444);
  t.teardown(() => chmodSync(file, 0o600));
  const r = await call('PUT', '/api/settings/budgets', { monthly_usd: 5 });
  t.equal(r.status, 409);
  t.match(r.body.error, { code: 'TOLLGATE_ERR_CONFIG_CONFLICT', message: /read-only \(mode 0444\)/ });
  t.equal(readFileSync(file, 'utf8'), TEXT, 'the file untouched');
  t.equal(statSync(file).mode & 0o777, 0o444, 'and still read-only (the rename would have replaced it, as root)');
  t.equal(gw.holder.current.budgets.monthly_usd, undefined, 'the running settings unchanged');
});
