// Alerts and budgets end to end: the official `openai` client drives spend (a paid fake upstream, $0.001 per token)
// and quota (a subscription fake upstream with a daily_tokens quota of 1,000) across every threshold; each alert
// appears exactly once in the dashboard list, in a real SMTP server's inbox and at a webhook receiver that verifies
// the signature; the gateway is restarted in the middle on the same data directory and fires nothing twice; once
// the daily budget is exceeded the next paid request is served by the free model, with the header and the row
// marked. Cost anomaly and exhaustion pattern have no history here and must stay silent.

import t, { type Test } from 'tap';
import OpenAI from 'openai';
import { startApp, DEMO_PROVIDER, type TestApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { rowOf, spyFetch } from '../helpers/clients.js';
import { receiver, smtpServer } from '../helpers/receivers.js';
import { metricValue } from '../helpers/prom.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import { clearOfDayEdges } from '../helpers/day-edge.js';

const SECRET = 'whsec_integration_42';
// The daily budget's day starts at 00:00 UTC and the subscription quota's (daily_tokens, 10:00+08:00) at 02:00 UTC:
// the whole file (about 30 s) runs inside one of each; a wait leaves it the rest of the 120 s a file has.
await clearOfDayEdges(t, 75_000, [0, 2]);
const paidUp = await startFakeOpenAI(t);
const subUp = await startFakeOpenAI(t);
const smtp = await smtpServer(t);
const hook = await receiver(t, SECRET);
const dataDir = tempDir(t);

const raw = (autoSwitch: boolean) => ({
  // The shipped flush interval (the tests' default is 50 ms): a quota alert is seen by the check right after the
  // request that crosses it, the quota counting this gateway's calls not stored yet, rows two seconds from ClickHouse.
  storage: { batch: { flush_ms: 2000 } },
  providers: {
    paid: fakeProvider(paidUp.baseUrl, { name: 'Paid', group: 'paid', price: { input: 1000, output: 1000 }, models: { m: { kind: 'llm' } } }),
    sub: fakeProvider(subUp.baseUrl, { name: 'Sub', group: 'subscription', price: { input: 1, output: 1 }, quota: { kind: 'daily_tokens', limit: 1000 }, models: { m: { kind: 'llm' } } }),
    free: { ...DEMO_PROVIDER, name: 'Free', group: 'free', models: { llama: { kind: 'llm' } } },
  },
  budgets: { daily_usd: 1, monthly_usd: 2, auto_switch: { enabled: autoSwitch, to: 'free/llama' } },
  alerts: {
    channels: { dashboard: true, email: { smtp_url: `smtp://127.0.0.1:${smtp.port}`, from: 'tollgate@localhost', to: ['ops@localhost'] }, webhook: { url: hook.url, secret: SECRET } },
  },
});

interface Listed {
  alerts: { id: string; kind: string; subject: string; threshold: number | null; title: string; message: string; read: boolean; data: Record<string, unknown> }[];
  unread: number;
}
const listed = async (gw: TestApp): Promise<Listed> => (await (await fetch(`${gw.url}/api/alerts?limit=100`)).json()) as Listed;
const keys = (l: Listed) => l.alerts.map((a) => `${a.kind}:${a.subject}:${a.threshold ?? ''}`).sort();

/** One request of `tokens` input tokens (no output) to `model`. */
async function spend(gw: TestApp, model: 'paid/m' | 'sub/m', tokens: number, spy = spyFetch()) {
  (model === 'paid/m' ? paidUp : subUp).next({ kind: 'ok', usage: { prompt_tokens: tokens, completion_tokens: 0 } });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: spy.fetch });
  await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'spend' }] });
  return spy;
}

/** Wait until the list holds exactly `want` (sorted keys), then a little longer to see nothing more arrives. */
async function expectAlerts(t: Test, gw: TestApp, want: string[], label: string) {
  await waitFor(async () => keys(await listed(gw)).length >= want.length, 8000).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 1500));
  t.same(keys(await listed(gw)), [...want].sort(), label);
}

const root = t;
let gw = await startApp(root, raw(true), { dataDir });
let expected: string[] = [];

t.test('spend crosses the daily 80 %, then 100 % with the monthly 50 %: each alert once, with its text', async (t) => {
  await spend(gw, 'paid/m', 500); // $0.50: daily 50 %, monthly 25 %: nothing yet
  await expectAlerts(t, gw, [], 'under every threshold: no alert (and no cost anomaly without history)');
  await spend(gw, 'paid/m', 300); // $0.80
  expected = ['daily_budget:daily:80'];
  await expectAlerts(t, gw, expected, 'daily 80 %');
  const a = (await listed(gw)).alerts[0]!;
  t.match(a.message, /^Spent \$0\.80 of the \$1\.00 daily budget \(80%\), \$0\.20 remaining\. The budget resets in /);
  await spend(gw, 'paid/m', 200); // $1.00
  expected.push('daily_budget:daily:100', 'monthly_budget:monthly:50', 'auto_switch:daily:');
  await expectAlerts(t, gw, expected, 'daily 100 %, monthly 50 %, and the auto-switch');
  const monthly = (await listed(gw)).alerts.find((x) => x.kind === 'monthly_budget')!;
  t.match(monthly.message, /Spent \$1\.00 of the \$2\.00 monthly budget \(50%\), \$1\.00 remaining; at this rate the month ends at \$\d+\.\d\d/, 'with a projection');
});

t.test('over the daily budget the next paid request is served by the free model, marked', async (t) => {
  const spy = spyFetch();
  const before = paidUp.received.length;
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: spy.fetch });
  const res = await client.chat.completions.create({ model: 'paid/m', messages: [{ role: 'user', content: 'hello' }] });
  t.match(res.choices[0]?.message.content, /^Tollgate demo reply:/, 'the free (mock) model answered');
  t.equal(paidUp.received.length, before, 'the paid upstream was not called');
  t.equal(spy.last.headers.get('x-tollgate-auto-switched'), 'true');
  const row = await rowOf(gw, spy.last.headers.get('x-request-id')!);
  t.same([row.model, row.requested_model, row.auto_switched, Number(row.cost)], ['free/llama', 'paid/m', true, 0]);
  const budgets = (await (await fetch(`${gw.url}/api/budgets`)).json()) as { daily: { spent: number; limit: number; percentage: number }; auto_switch: { active: boolean } };
  t.same([budgets.daily.spent, budgets.daily.limit, budgets.daily.percentage, budgets.auto_switch.active], [1, 1, 100, true]);
});

t.test('a restart fires nothing twice', async (t) => {
  await gw.close();
  gw = await startApp(root, raw(true), { dataDir }); // the file's teardown, not this subtest's, closes it
  await expectAlerts(t, gw, expected, 'the same alerts after the restart, none new');
});

t.test('quota crosses 80 %, 90 % and exhausted on the subscription provider', async (t) => {
  await spend(gw, 'sub/m', 800);
  expected.push('quota_warning:sub:80');
  await expectAlerts(t, gw, expected, 'quota 80 %');
  const q = (await listed(gw)).alerts.find((x) => x.kind === 'quota_warning')!;
  t.match(q.message, /^Sub \(sub\) has used 80% of its quota: 800 of 1,000 tokens, 200 tokens remaining\. It resets in .+ \(\d{4}-\d\d-\d\dT02:00:00\.000Z\)\.$/);
  await spend(gw, 'sub/m', 100);
  expected.push('quota_warning:sub:90');
  await expectAlerts(t, gw, expected, 'quota 90 %');
  await spend(gw, 'sub/m', 100);
  expected.push('quota_exhausted:sub:100');
  await expectAlerts(t, gw, expected, 'exhausted');
});

t.test('with the switch off, paid spend reaches the monthly 80 % and 100 %', async (t) => {
  gw.holder.replace({ ...gw.holder.current, budgets: { ...gw.holder.current.budgets, auto_switch: { enabled: false, to: 'free/llama' } } });
  await spend(gw, 'paid/m', 600); // $1.60
  expected.push('monthly_budget:monthly:80');
  await expectAlerts(t, gw, expected, 'monthly 80 %');
  await spend(gw, 'paid/m', 400); // $2.00
  expected.push('monthly_budget:monthly:100');
  await expectAlerts(t, gw, expected, 'monthly 100 %');
});

t.test('every alert reached the mailbox and the webhook once, signed; deliveries and metrics recorded', async (t) => {
  const n = expected.length;
  await waitFor(() => smtp.mails.length >= n && hook.got.length >= n, 8000);
  await new Promise((r) => setTimeout(r, 500));
  const titles = (await listed(gw)).alerts.map((a) => a.title).sort();
  t.same(smtp.mails.map((m) => m.headers.subject!.replace(/^\[Tollgate\] /, '')).sort(), titles, 'one email per alert, titled like it');
  t.ok(smtp.mails.every((m) => m.rcpt.includes('ops@localhost') && m.from === 'tollgate@localhost'));
  t.equal(hook.got.length, n, 'one webhook call per alert');
  t.ok(hook.got.every((g) => g.signed), 'every webhook body carries a valid signature');
  t.same(hook.got.map((g) => (JSON.parse(g.body) as { title: string }).title).sort(), titles);

  const store = gw.app.tollgate.store;
  const deliveries = await store.query<{ channel: string; delivered: boolean; n: string }>(
    `SELECT channel, delivered, count() AS n FROM ${store.t('alert_deliveries')} GROUP BY channel, delivered ORDER BY channel`,
  );
  t.same(deliveries.map((d) => [d.channel, Boolean(d.delivered)]), [['dashboard', true], ['email', true], ['webhook', true]], 'every delivery recorded, none failed');
  const text = await gw.metrics();
  t.equal(metricValue(text, 'tollgate_budget_limit_usd', { window: 'daily' }), 1);
  t.equal(metricValue(text, 'tollgate_budget_limit_usd', { window: 'monthly' }), 2);
  t.equal(metricValue(text, 'tollgate_spend_usd', { window: 'today' }), 2);
  // This process fired the alerts since the restart: 3 quota + 2 monthly.
  t.equal(metricValue(text, 'tollgate_alerts_fired_total', { kind: 'quota_warning' }), 2);
  t.equal(metricValue(text, 'tollgate_alerts_fired_total', { kind: 'monthly_budget' }), 2);
  t.equal(metricValue(text, 'tollgate_alerts_fired_total', { kind: 'daily_budget' }), 0, 'none fired again after the restart');
  t.equal(metricValue(text, 'tollgate_alerts_fired_total', { kind: 'cost_anomaly' }), 0);
});

t.test('mark read, and the test notification reports per channel', async (t) => {
  const before = await listed(gw);
  t.equal(before.unread, expected.length);
  const one = before.alerts[0]!.id;
  const r1 = await fetch(`${gw.url}/api/alerts/read`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ids: [one] }) });
  t.same(await r1.json(), { marked: 1 });
  const after = await listed(gw);
  t.equal(after.unread, expected.length - 1);
  t.equal(after.alerts.find((a) => a.id === one)?.read, true);
  const unread = (await (await fetch(`${gw.url}/api/alerts?unread=true&limit=100`)).json()) as Listed;
  t.notOk(unread.alerts.some((a) => a.id === one), 'unread=true leaves it out');
  const all = await fetch(`${gw.url}/api/alerts/read`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ all: true }) });
  t.same(await all.json(), { marked: expected.length - 1 });
  const bad = await fetch(`${gw.url}/api/alerts/read`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ids: ['nope'] }) });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST', param: 'ids' } });

  const mails = smtp.mails.length;
  const hooks = hook.got.length;
  const res = await fetch(`${gw.url}/api/alerts/test`, { method: 'POST' });
  t.equal(res.status, 200);
  const body = (await res.json()) as { results: { channel: string; delivered: boolean }[] };
  t.same(body.results.map((r) => [r.channel, r.delivered]), [['dashboard', true], ['email', true], ['webhook', true]]);
  t.equal(smtp.mails.length, mails + 1);
  t.equal(hook.got.length, hooks + 1);
  t.ok((await listed(gw)).alerts.some((a) => a.kind === 'test'), 'the test notification is in the dashboard list');
});

t.test('a failing channel is retried, then recorded as failed, never lost silently', async (t) => {
  gw.holder.replace({ ...gw.holder.current, alerts: { ...gw.holder.current.alerts, channels: { ...gw.holder.current.alerts.channels, webhook: { enabled: true, url: 'http://127.0.0.1:9/closed', secret: SECRET } } } });
  const res = await fetch(`${gw.url}/api/alerts/test`, { method: 'POST' });
  const body = (await res.json()) as { results: { channel: string; delivered: boolean; attempts: number; error: string }[] };
  const webhook = body.results.find((r) => r.channel === 'webhook')!;
  t.equal(webhook.delivered, false);
  t.ok(webhook.attempts > 1, `retried (${webhook.attempts} attempts)`);
  t.notMatch(webhook.error, SECRET);
  await waitFor(async () => {
    const rows = await gw.app.tollgate.store.query<{ n: string }>(`SELECT count() AS n FROM ${gw.app.tollgate.store.t('alert_deliveries')} WHERE channel = 'webhook' AND NOT delivered`);
    return Number(rows[0]?.n) === 1;
  });
  t.equal(metricValue(await gw.metrics(), 'tollgate_notifications_total', { channel: 'webhook', result: 'failed' }), 1);
});
