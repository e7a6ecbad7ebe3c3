// The lists a settings write can put into the config file are bounded (src/api/settings.ts, src/config/schema.ts;
// docs/config.md): the alert thresholds, at ALERT_THRESHOLDS_MAX_ITEMS (20) each. Before, a 300,000-item
// `thresholds.quota` held the event loop for 21 s and was written to the file. Now a 21-item list is a 400 naming the
// field and the file is unchanged to the byte; 20 are accepted and written; the loader refuses 21 in a file too.
// The two strings of PUT /api/settings/budgets are bounded as well (any length the body limit allowed was written).

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ALERT_THRESHOLDS_MAX_ITEMS, SETTING_STRING_MAX_LENGTH } from '../../src/config/schema.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { configFileText, demoProvidersYaml, startApp, type TestApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = configFileText(join(dir, 'data'), `${demoProvidersYaml()}budgets:
  daily_usd: 10
  timezone: UTC
`);
writeFileSync(file, TEXT);
const gw: TestApp = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

async function putBudgets(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/api/settings/budgets`, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: JSON.parse(await res.text()) as { error?: { code: string; param: string | null }; budgets?: { auto_switch: { to: string | null } } } };
}

async function putAlerts(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/api/settings/alerts`, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as { error?: { code: string; param: string | null; message: string }; alerts?: { thresholds: Record<string, number[]> } } };
}

/** `n` distinct percentages in (0, 100): 1, 2, ..., n (a list the config accepts but for its length). */
const percents = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

t.beforeEach(() => writeFileSync(file, TEXT));

t.test('the bound is 20', async (t) => {
  t.equal(ALERT_THRESHOLDS_MAX_ITEMS, 20);
});

t.test('21 thresholds: 400 naming the field, the file unchanged to the byte, the running settings unchanged', async (t) => {
  for (const list of ['quota', 'daily', 'monthly'] as const) {
    const before = gw.holder.current.alerts.thresholds[list];
    const r = await putAlerts({ thresholds: { [list]: percents(ALERT_THRESHOLDS_MAX_ITEMS + 1) } });
    t.equal(r.status, 400, `${list}: 400`);
    t.match(r.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: `alerts.thresholds.${list}` }, `${list}: names the field`);
    t.match(r.body.error?.message, /^alerts\.thresholds\.\w+: .*20 items/, String(r.body.error?.message));
    t.equal(readFileSync(file, 'utf8'), TEXT, `${list}: the file is unchanged`);
    t.same(gw.holder.current.alerts.thresholds[list], before, `${list}: the running thresholds are unchanged`);
  }
});

t.test('the body check refuses a long list before the file is read (a stale If-Match would be a 412 there)', async (t) => {
  const r = await putAlerts({ thresholds: { daily: percents(ALERT_THRESHOLDS_MAX_ITEMS + 1) } }, { 'if-match': '"stale"' });
  t.equal(r.status, 400, 'the body is refused first');
  t.match(r.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'alerts.thresholds.daily' });
  const ok = await putAlerts({ thresholds: { daily: percents(ALERT_THRESHOLDS_MAX_ITEMS) } }, { 'if-match': '"stale"' });
  t.equal(ok.status, 412, 'a list within the bound reaches the file, whose ETag does not match');
  t.equal(readFileSync(file, 'utf8'), TEXT);
});

t.test('300,000 thresholds: refused at once, the file unchanged', async (t) => {
  const started = Date.now();
  const r = await putAlerts({ thresholds: { quota: Array.from({ length: 300_000 }, (_, i) => 1 + i / 300_000) } });
  const ms = Date.now() - started;
  t.equal(r.status, 400);
  t.match(r.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'alerts.thresholds.quota' });
  t.ok(ms < 3000, `answered in ${ms} ms (21 s before the bound)`);
  t.equal(readFileSync(file, 'utf8'), TEXT);
});

t.test('20 thresholds: accepted, written and applied', async (t) => {
  const twenty = percents(ALERT_THRESHOLDS_MAX_ITEMS).map((n) => n * 4.5); // 4.5 ... 90
  const r = await putAlerts({ thresholds: { quota: twenty, daily: percents(20), monthly: percents(20) } });
  t.equal(r.status, 200, JSON.stringify(r.body.error));
  t.same(r.body.alerts?.thresholds.quota, twenty);
  t.same(gw.holder.current.alerts.thresholds.quota, twenty, 'running');
  t.same((parse(readFileSync(file, 'utf8')) as { alerts: { thresholds: Record<string, number[]> } }).alerts.thresholds, { quota: twenty, daily: percents(20), monthly: percents(20) }, 'in the file');
});

t.test('the loader refuses a file with 21 thresholds, naming the path', async (t) => {
  const over = `${TEXT}alerts:\n  thresholds:\n    monthly: [${percents(21).join(', ')}]\n`;
  const err = t.throws(() => parseConfigText(over, {}, 'config.yaml')) as unknown;
  t.ok(err instanceof ConfigError);
  t.match((err as ConfigError).issues, [{ path: 'alerts.thresholds.monthly', message: /20 items/ }]);
  t.doesNotThrow(() => parseConfigText(`${TEXT}alerts:\n  thresholds:\n    monthly: [${percents(20).join(', ')}]\n`, {}, 'config.yaml'), '20 load');
});

t.test('budgets.timezone and budgets.auto_switch.to: a longer string is a 400 naming it before the file is read', async (t) => {
  // With a stale If-Match: a body that reached the file would be a 412.
  const stale = { 'if-match': '"stale"' };
  const long = await putBudgets({ auto_switch: { to: `demo/${'x'.repeat(SETTING_STRING_MAX_LENGTH.to)}` } }, stale);
  t.equal(long.status, 400);
  t.match(long.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'budgets.auto_switch.to' });
  const zone = await putBudgets({ timezone: `Europe/${'x'.repeat(SETTING_STRING_MAX_LENGTH.timezone)}` }, stale);
  t.equal(zone.status, 400);
  t.match(zone.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'budgets.timezone' });
  t.equal(readFileSync(file, 'utf8'), TEXT, 'the file is unchanged');
  const ok = await putBudgets({ auto_switch: { to: 'demo/echo-1' } });
  t.equal(ok.status, 200, 'a model name is accepted');
  t.equal(ok.body.budgets?.auto_switch.to, 'demo/echo-1');
  const err = t.throws(() => parseConfigText(`${TEXT}  auto_switch: { to: demo/${'x'.repeat(SETTING_STRING_MAX_LENGTH.to)} }\n`, {}, 'config.yaml')) as unknown;
  t.match((err as ConfigError).issues, [{ path: 'budgets.auto_switch.to' }], 'and the loader refuses it in a file');
});
