// The observability files users load elsewhere: the Prometheus rules pass `promtool test rules`, every metric a
// rule queries is one this gateway really exports (the compose file: compose.test.ts; the Grafana dashboards:
// dashboards.test.ts).
// promtool and docker-compose come from Debian's packages (.ci/run installs them).

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { parse } from 'yaml';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** Metric names used in a PromQL expression (label matchers and `by (...)` lists removed first). */
function metricNames(expr: string): string[] {
  const names = new Set<string>();
  const bare = expr.replace(/\{[^}]*\}/g, '').replace(/\b(by|without)\s*\([^)]*\)/g, '');
  for (const m of bare.matchAll(/\b((?:tollgate|gen_ai)_[a-z0-9_]+)\b/g)) names.add(m[1]!);
  return [...names];
}


// The demo provider gets a quota so that the quota gauges (only for providers with a limit) have samples.
// A quota (the quota gauges exist only for providers with a limit) and budgets (tollgate_budget_limit_usd exists only
// for a configured budget), so every metric a rule reads has samples: no exceptions.
// An HTTP upstream that sends rate-limit headers, for the provider-reported gauges (docs/quota.md).
const upstream = await startFakeOpenAI(t);
upstream.setResponseHeaders({ 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '900', 'x-ratelimit-reset-tokens': '1m0s' });
const gw = await startApp(t, {
  providers: { demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_tokens', limit: 1_000_000 } }, fake: fakeProvider(upstream.baseUrl) },
  budgets: { daily_usd: 10, monthly_usd: 100 },
  // A combo: its requests' and attempts' series (TollgateProviderFailing reads them) exist from the start.
  combos: { duo: { strategy: 'fallback', models: ['fake/gpt-4o', 'demo/echo-1'] } },
});
// One streamed and one unary request so every family has samples, and one through the HTTP upstream.
for (const [model, stream] of [['demo/echo-1', false], ['demo/echo-1', true], ['fake/gpt-4o', false]] as const) {
  const r = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await r.body.dump();
}
await gw.flush();
const exported = new Set(
  (await gw.metrics())
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(/[{ ]/)[0]!),
);
for (const n of [...exported]) {
  const base = n.replace(/_(bucket|sum|count)$/, '');
  exported.add(base);
}

type Rule = { alert: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> };
const rules = (parse(readFileSync(join(ROOT, 'alerting-rules/tollgate.rules.yml'), 'utf8')) as { groups: { rules: Rule[] }[] })
  .groups.flatMap((g) => g.rules);
const ruleTests = readdirSync(join(ROOT, 'alerting-rules/tests')).filter((f) => f.endsWith('.yml')).sort();

t.test('promtool: the rules are valid and their unit tests pass', async (t) => {
  const check = spawnSync('promtool', ['check', 'rules', join(ROOT, 'alerting-rules/tollgate.rules.yml')], { encoding: 'utf8' });
  t.equal(check.status, 0, check.stdout + check.stderr);
  t.match(check.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  t.ok(ruleTests.length > 0, 'rule tests exist');
  // Every test file under alerting-rules/tests, in one run; promtool prints one SUCCESS per file.
  const run = spawnSync('promtool', ['test', 'rules', ...ruleTests], { cwd: join(ROOT, 'alerting-rules/tests'), encoding: 'utf8' });
  t.equal(run.status, 0, run.stdout + run.stderr);
  t.equal(run.stdout.match(/SUCCESS/g)?.length, ruleTests.length, run.stdout);
});

t.test('every rule is named, labelled and annotated, and unit-tested', async (t) => {
  const tested = new Set<string>();
  for (const f of ruleTests) {
    const doc = parse(readFileSync(join(ROOT, 'alerting-rules/tests', f), 'utf8')) as { tests: { alert_rule_test?: { alertname: string }[] }[] };
    for (const test of doc.tests) for (const a of test.alert_rule_test ?? []) tested.add(a.alertname);
  }
  t.equal(new Set(rules.map((r) => r.alert)).size, rules.length, 'names are unique');
  for (const r of rules) {
    t.match(r.alert, /^Tollgate[A-Z][A-Za-z0-9]*$/, `${r.alert}: CamelCase with the Tollgate prefix`);
    t.ok(['info', 'warning', 'critical'].includes(r.labels?.severity ?? ''), `${r.alert}: severity label`);
    t.ok(r.annotations?.summary, `${r.alert}: summary`);
    t.ok(r.annotations?.description, `${r.alert}: description`);
    t.ok(tested.has(r.alert), `${r.alert}: has a promtool unit test`);
  }
});

t.test('every metric a rule queries is exported', async (t) => {
  t.ok(rules.length >= 3);
  for (const r of rules) {
    const names = metricNames(r.expr);
    t.ok(names.length > 0, `${r.alert} queries a tollgate metric`);
    for (const n of names) t.ok(exported.has(n), `${r.alert}: ${n} is exported`);
    // The `query` templates of the annotations too (their braces are template delimiters: match the names as they are).
    for (const text of Object.values(r.annotations ?? {})) {
      for (const m of text.matchAll(/\b((?:tollgate|gen_ai)_[a-z0-9_]+)\b/g)) {
        t.ok(exported.has(m[1]!), `${r.alert} annotation: ${m[1]} is exported`);
      }
    }
  }
});

