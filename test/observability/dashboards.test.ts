// The Grafana dashboards in dashboards/ stay true to the gateway they watch:
//
// - each file validates against a JSON Schema generated, here and now, from the `Dashboard` type that
//   @grafana/schema exports (so a new Grafana schema is picked up by updating the package), and the check rejects
//   broken copies;
// - every PromQL expression (panel targets, label_values() variables, and the expressions and annotation queries of
//   alerting-rules/tollgate.rules.yml) runs on a real Prometheus that scrapes a real Tollgate, and every metric it
//   names is one that Tollgate's /metrics really exports (no allow-list: the app is configured and driven so that
//   every family has samples);
// - every ClickHouse query runs, after the plugin's macros are expanded, against the real schema in the embedded
//   engine, on rows that the same traffic wrote;
// - docs/observability.md names every panel.

import t from 'tap';
import { createRequire } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { collectDefaultMetrics } from 'prom-client';
import { createGenerator } from 'ts-json-schema-generator';
import { request } from 'undici';
import { parse } from 'yaml';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { startPrometheus } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DIR = join(ROOT, 'dashboards');
/** The schemaVersion Grafana 11.6, the last Grafana 11, writes (41: timepicker.time_options removed). */
const SCHEMA_VERSION = 41;
const PROM_DS = 'prometheus';
const CH_DS = 'grafana-clickhouse-datasource';

// ------------------------------------------------------------------------------------------------ the dashboards

interface DsRef { type?: string; uid?: string }
interface Target { refId: string; datasource?: DsRef; expr?: string; rawSql?: string; editorType?: string; queryType?: string; format?: number }
interface Panel { id: number; type: string; title: string; description?: string; datasource?: DsRef; gridPos: { x: number; y: number; w: number; h: number }; targets?: Target[]; panels?: Panel[] }
interface Variable { name: string; type: string; query?: string | { query?: string }; datasource?: DsRef; includeAll?: boolean; allValue?: string; current?: { value?: string | string[] } }
type Vector = { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
interface Dashboard { uid: string; id: unknown; title: string; schemaVersion: number; tags: string[]; panels: Panel[]; templating: { list: Variable[] } }

const files = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
const dashboards = files.map((file) => ({ file, d: JSON.parse(readFileSync(join(DIR, file), 'utf8')) as Dashboard }));
const panelsOf = (d: Dashboard): Panel[] => d.panels.flatMap((p) => (p.type === 'row' ? (p.panels ?? []) : [p]));
const targetsOf = (d: Dashboard, type: string) =>
  panelsOf(d).flatMap((p) => (p.targets ?? []).filter((x) => x.datasource?.type === type).map((x) => ({ where: `${d.uid} / ${p.title} / ${x.refId}`, x })));

/** The JSON Schema of the `Dashboard` type, generated from the types @grafana/schema exports. */
function dashboardSchema(): object {
  const pkgFile = createRequire(import.meta.url).resolve('@grafana/schema/package.json');
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { exports: { '.': { types: string } } };
  // The exported `Dashboard` is the veneer over the generated raw/dashboard/x type (it also takes `datasource: null`,
  // as Grafana writes it). expose 'none' inlines every type: the package has two different `DataSourceRef`s, whose
  // named definitions would clash. Every interface becomes a closed object: an unknown property is an error.
  return createGenerator({ path: join(dirname(pkgFile), pkg.exports['.'].types), type: 'Dashboard', expose: 'none', skipTypeCheck: true })
    .createSchema('Dashboard');
}

/** What a variable stands for in a test query: its "All" value, or its current value. */
function variableValues(d: Dashboard): Map<string, string> {
  const values = new Map<string, string>();
  for (const v of d.templating.list) {
    if (v.type === 'datasource') continue;
    const current = Array.isArray(v.current?.value) ? v.current.value[0] : v.current?.value;
    values.set(v.name, v.includeAll && v.allValue !== undefined ? v.allValue : (current ?? ''));
  }
  return values;
}

/** Replace Grafana's variables (`$x`, `${x}`, `${x:regex}`); an unknown variable or format throws. */
function substitute(text: string, values: ReadonlyMap<string, string>, builtIn: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::(\w+))?\}|\$(\w+)/g, (_all, braced: string | undefined, format: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    const value = builtIn[name] ?? values.get(name);
    if (value === undefined) throw new Error(`unknown variable $${name}`);
    if (format !== undefined && format !== 'regex') throw new Error(`format :${format} of $${name} has no test value`);
    return value;
  });
}

/** Grafana's PromQL built-ins for a one-hour range. */
const PROM_BUILTINS = { __rate_interval: '1m', __interval: '1m', __range: '1h', __range_s: '3600' };

/**
 * A ClickHouse query as the official plugin sends it for the last day: its macros expanded exactly as its backend
 * does (grafana/clickhouse-datasource pkg/macros), with a 60 s interval; then the dashboard variables.
 */
function forClickHouse(sql: string, values: ReadonlyMap<string, string>, fromMs: number, toMs: number): string {
  const s = (ms: number) => `toDateTime(${Math.floor(ms / 1000)})`;
  const ms = (v: number) => `fromUnixTimestamp64Milli(${v})`;
  const macros: Record<string, (arg: string) => string> = {
    timeFilter: (c) => `${c} >= ${s(fromMs)} AND ${c} <= ${s(toMs)}`,
    timeFilter_ms: (c) => `${c} >= ${ms(fromMs)} AND ${c} <= ${ms(toMs)}`,
    timeInterval: (c) => `toStartOfInterval(toDateTime(${c}), INTERVAL 60 second)`,
    timeInterval_ms: (c) => `toStartOfInterval(toDateTime64(${c}, 3), INTERVAL 60000 millisecond)`,
  };
  const expanded = sql
    .replace(/\$__(\w+)\(([^)]*)\)/g, (all, name: string, arg: string) => {
      const macro = macros[name];
      if (!macro) throw new Error(`unknown macro ${all}`);
      return macro(arg.trim());
    })
    .replace(/\$__(fromTime|toTime)(_ms)?\b/g, (_all, which: string, inMs: string | undefined) => {
      const at = which === 'fromTime' ? fromMs : toMs;
      return inMs ? ms(at) : s(at);
    });
  return substitute(expanded, values, { __interval_s: '60' });
}

// ------------------------------------------------------------------------------------------------ metric names

const PROMQL_KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan', 'atan2']);

/**
 * The metric names a PromQL expression selects: identifiers left once strings, label matchers, label lists and
 * range windows are removed, that are not keywords and not followed by `(` (functions and aggregations).
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/#.*$/gm, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w:.$])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)) {
    if (!PROMQL_KEYWORDS.has(m[1]!.toLowerCase())) names.add(m[1]!);
  }
  return [...names];
}

/**
 * The series names in a /metrics text, as Prometheus stores them: a counter or gauge under its own name, a
 * histogram as <name>_bucket, <name>_sum and <name>_count (never the bare <name>, which has no series).
 */
function exportedNames(text: string): Set<string> {
  return new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(/[{ ]/)[0]!));
}

const unknownMetrics = (expr: string, exported: ReadonlySet<string>) => metricNames(expr).filter((n) => !exported.has(n));

// ------------------------------------------------------------------------------------------------ the PromQL in the repository

interface Expr { where: string; expr: string; dashboard?: Dashboard; labelValues?: { match: string; label: string } }

function promExpressions(): Expr[] {
  const out: Expr[] = [];
  for (const { d } of dashboards) {
    for (const { where, x } of targetsOf(d, PROM_DS)) out.push({ where, expr: x.expr ?? '', dashboard: d });
    for (const v of d.templating.list) {
      if (v.type !== 'query' || v.datasource?.type !== PROM_DS) continue;
      const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
      const m = /^label_values\((.+),\s*(\w+)\)$/.exec(q.trim());
      if (!m) throw new Error(`${d.uid} $${v.name}: only label_values(<selector>, <label>) is supported here: ${q}`);
      out.push({ where: `${d.uid} $${v.name}`, expr: m[1]!, dashboard: d, labelValues: { match: m[1]!, label: m[2]! } });
    }
  }
  return out;
}

type Rule = { alert?: string; record?: string; expr: string; annotations?: Record<string, string> };
function ruleExpressions(): Expr[] {
  const doc = parse(readFileSync(join(ROOT, 'alerting-rules/tollgate.rules.yml'), 'utf8')) as { groups: { rules: Rule[] }[] };
  const out: Expr[] = [];
  for (const r of doc.groups.flatMap((g) => g.rules)) {
    const name = r.alert ?? r.record ?? '?';
    out.push({ where: `rule ${name}`, expr: r.expr });
    // The `query "..."` calls of the annotation templates are PromQL too (Go string escapes).
    for (const text of Object.values(r.annotations ?? {})) {
      for (const m of text.matchAll(/\bquery\s+"((?:[^"\\]|\\.)*)"/g)) out.push({ where: `rule ${name} annotation`, expr: m[1]!.replace(/\\(.)/g, '$1') });
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ a gateway with traffic

// Generated before the gateway starts: generation blocks the event loop for seconds, which would fail its scrapes.
const schema = dashboardSchema();

// A demo provider with a quota (quota gauges), a flaky OpenAI-compatible upstream that fails on command (cooldowns,
// failed attempts and requests), a fallback combo over both (combo metrics and attempt rows), and a daily budget
// that the first request exceeds (budget gauges, alerts fired, deliveries recorded).
const flaky = await startFakeOpenAI(t);
// It reports its rate limits as OpenAI does, so the provider-reported gauges the alerting rules read are exported.
flaky.setResponseHeaders({ 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '900', 'x-ratelimit-reset-tokens': '1m0s' });
const gw = await startApp(t, {
  providers: {
    demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_tokens', limit: 1_000_000 } },
    flaky: fakeProvider(flaky.baseUrl, { name: 'Flaky', models: { m: { kind: 'llm' } } }),
  },
  combos: { smart: { strategy: 'fallback', models: ['flaky/m', 'demo/echo-1'] } },
  budgets: { daily_usd: 0.000001, monthly_usd: 100 },
});
// The test helper builds the app without the process metrics; production registers them (Metrics, processMetrics
// defaults to on) in exactly this way, and the health dashboard reads them.
collectDefaultMetrics({ register: gw.app.tollgate.metrics.registry });

const store = gw.app.tollgate.store;
const UPSTREAM_500 = { kind: 'error', status: 500, body: { error: { message: 'boom', type: 'server_error' } } } as const;
async function chat(model: string, stream: boolean): Promise<number> {
  const r = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await r.body.dump();
  return r.statusCode;
}
flaky.next(UPSTREAM_500);
const combo = await chat('smart', false); // the flaky member fails (a cooldown starts), the demo member answers
const comboStreamed = await chat('smart', true); // the flaky member is cooling down: skipped
const unary = await chat('demo/echo-1', false);
const streamed = await chat('demo/echo-1', true);
flaky.next(UPSTREAM_500);
const failed = await chat('flaky/m', false); // a direct request is sent even while its provider cools down
const refused = await chat('nowhere/x', false); // refused before routing: a row with provider _other, no upstream call
const statuses = { combo, comboStreamed, unary, streamed, failed, refused };
await gw.flush();
const count = async (sql: string) => Number((await store.query<{ n: string }>(`SELECT count() AS n FROM ${sql}`))[0]!.n);
await waitFor(async () => (await count(store.t('alerts'))) > 0 && (await count(store.t('alert_deliveries'))) > 0, 15_000);

const exported = exportedNames(await gw.metrics());
// A 2 s interval (and so a 2 s scrape timeout): a slow scrape on a busy machine would mark every gauge stale.
const prom = await startPrometheus(t, { targets: [new URL(gw.url).host], scrapeInterval: '2s' });
// Enough scrapes for rate() over the 1m that stands for $__rate_interval.
await waitFor(async () => {
  const r = await prom.api<Vector>('query', { query: 'count_over_time(tollgate_spool_rows[1m])' });
  return Number(r.result[0]?.value[1] ?? 0) >= 3;
}, 30_000);

// ------------------------------------------------------------------------------------------------ the checks

t.test('the traffic: combo requests (a failed attempt, a skipped member), unary, streamed, a failure', async (t) => {
  t.same(statuses, { combo: 200, comboStreamed: 200, unary: 200, streamed: 200, failed: 500, refused: 404 });
  const attempts = await store.query<{ status: string; n: string }>(
    `SELECT status, count() AS n FROM ${store.t('requests')} FINAL WHERE kind = 'attempt' GROUP BY status ORDER BY status`);
  t.same(attempts.map((r) => [r.status, Number(r.n)]), [['failure', 1], ['success', 2]], 'the first combo request fell back; the second skipped the cooling member');
});

t.test('every dashboard validates against the Dashboard type of @grafana/schema', async (t) => {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
  t.ok(files.length >= 1, files.join(', '));
  for (const { file, d } of dashboards) t.ok(validate(d), `${file}: ${JSON.stringify(validate.errors?.slice(0, 5))}`);

  t.test('and the check rejects broken dashboards', async (t) => {
    const d = dashboards[0]!.d;
    const broken: [string, unknown][] = [
      ['a panel with gridPos "x"', { ...d, panels: [{ ...d.panels[0], gridPos: 'x' }] }],
      ['an unknown top-level property', { ...d, dashbaord: {} }],
      ['a panel without a type', { ...d, panels: [{ ...d.panels[0], type: undefined }] }],
      ['a variable of an unknown type', { ...d, templating: { list: [{ name: 'x', type: 'datasources' }] } }],
      ['schemaVersion as a string', { ...d, schemaVersion: String(d.schemaVersion) }],
    ];
    for (const [what, doc] of broken) t.notOk(validate(JSON.parse(JSON.stringify(doc))), `${what} is rejected`);
  });
});

t.test('dashboard conventions: uid, id, schemaVersion, data source variables and references, layout', async (t) => {
  const provisioned = (parse(readFileSync(join(ROOT, 'deploy/grafana/provisioning/datasources/datasources.yaml'), 'utf8')) as { datasources: { uid: string; type: string }[] }).datasources;
  const uids = new Set<string>();
  for (const { file, d } of dashboards) {
    t.equal(file, `${d.uid}.json`, `${file}: named after its uid`);
    t.ok(/^[a-z0-9-]{8,40}$/.test(d.uid) && !uids.has(d.uid), `${file}: a stable, unique uid`);
    uids.add(d.uid);
    t.equal(d.id, null, `${file}: id null, so an import creates it`);
    t.equal(d.schemaVersion, SCHEMA_VERSION, `${file}: schemaVersion`);
    t.ok(d.tags.includes('tollgate'), `${file}: tagged tollgate (the dashboard links list them)`);
    for (const [name, type] of [['prometheus', PROM_DS], ['clickhouse', CH_DS]] as const) {
      const v = d.templating.list.find((x) => x.name === name);
      t.ok(v?.type === 'datasource' && v.query === type, `${file}: data source variable $${name} (${type})`);
      t.ok(provisioned.some((p) => p.type === type && p.uid === v?.current?.value), `${file}: $${name} defaults to the provisioned data source`);
    }
    const ids = new Set<number>();
    const placed: Panel['gridPos'][] = [];
    for (const p of d.panels.flatMap((x) => [x, ...(x.panels ?? [])])) {
      t.notOk(ids.has(p.id), `${file}: panel id ${p.id} is unique`);
      ids.add(p.id);
      const { x, y, w, h } = p.gridPos;
      t.ok(x >= 0 && w > 0 && x + w <= 24 && h > 0, `${file} / ${p.title}: inside the 24-column grid`);
      t.notOk(placed.some((o) => x < o.x + o.w && o.x < x + w && y < o.y + o.h && o.y < y + h), `${file} / ${p.title}: overlaps no other panel`);
      placed.push(p.gridPos);
    }
    for (const p of panelsOf(d)) {
      t.ok(p.title && p.description, `${file} / ${p.title}: titled and described (the question it answers)`);
      const ds = p.datasource;
      const ok = (ds?.type === PROM_DS && ds.uid === '${prometheus}') || (ds?.type === CH_DS && ds.uid === '${clickhouse}');
      t.ok(ok, `${file} / ${p.title}: uses \${prometheus} or \${clickhouse}`);
      t.ok((p.targets ?? []).length > 0, `${file} / ${p.title}: has queries`);
      for (const x of p.targets ?? []) t.same(x.datasource, ds, `${file} / ${p.title} / ${x.refId}: the panel's data source`);
    }
    for (const { where, x } of targetsOf(d, PROM_DS)) {
      for (const m of (x.expr ?? '').matchAll(/\[([^\]]*)\]/g)) {
        t.ok(['$__rate_interval', '$__range'].includes(m[1]!), `${where}: range [${m[1]}] is $__rate_interval (or $__range for range totals)`);
      }
    }
    for (const { where, x } of targetsOf(d, CH_DS)) {
      t.same([x.editorType, x.queryType, [0, 1].includes(x.format ?? -1)], ['sql', 'sql', true], `${where}: the plugin's SQL query shape`);
      for (const m of (x.rawSql ?? '').matchAll(/\b(?:FROM|JOIN)\s+(?!\()([\w.]+)/gi)) t.match(m[1], /^tollgate\./, `${where}: ${m[1]} is database-qualified`);
    }
  }
});

t.test('every PromQL expression runs on a real Prometheus scraping Tollgate', async (t) => {
  const dash = promExpressions();
  const rules = ruleExpressions();
  t.ok(dash.length > 50 && rules.length > 10, `${dash.length} dashboard and ${rules.length} rule expressions`);
  // The last scrape succeeded (a failed one marks every gauge stale).
  await waitFor(async () => (await prom.api<Vector>('query', { query: 'up' })).result[0]?.value[1] === '1', 10_000);
  for (const e of [...dash, ...rules]) {
    const query = e.dashboard ? substitute(e.expr, variableValues(e.dashboard), PROM_BUILTINS) : e.expr;
    try {
      if (e.labelValues) {
        const values = await prom.api<string[]>(`label/${e.labelValues.label}/values`, { 'match[]': substitute(e.labelValues.match, new Map(), {}) });
        t.ok(values.length > 0, `${e.where}: ${values.join(', ')}`);
      } else {
        const data = await prom.api<Vector>('query', { query });
        // A panel shows data against this gateway; a rule's expression is a condition, empty while it holds not.
        if (e.dashboard) t.ok(data.result.length > 0, `${e.where}: returns series: ${query}`);
        else t.pass(`${e.where}: valid`);
      }
    } catch (err) {
      t.fail(`${e.where}: ${(err as Error).message}: ${query}`);
    }
  }
});

t.test('every metric an expression names is one Tollgate exports', async (t) => {
  for (const e of [...promExpressions(), ...ruleExpressions()]) {
    const expr = e.dashboard ? substitute(e.expr, variableValues(e.dashboard), PROM_BUILTINS) : e.expr;
    t.ok(metricNames(expr).length > 0, `${e.where}: names a metric`);
    t.same(unknownMetrics(expr, exported), [], `${e.where}: every metric is exported`);
  }
});

t.test('the metric check reports a renamed metric', async (t) => {
  t.same(metricNames('sum by (provider) (rate(a_total{x="b_total"}[5m] offset 1d)) / on (provider) group_left c * 1e6 > bool 0.5'), ['a_total', 'c'],
    'selectors only: not label values, functions, keywords, windows or numbers');
  const original = promExpressions().find((e) => e.expr.includes('tollgate_requests_total'));
  t.ok(original, 'a dashboard expression queries tollgate_requests_total');
  const expr = substitute(original!.expr, variableValues(original!.dashboard!), PROM_BUILTINS);
  t.same(unknownMetrics(expr, exported), []);
  t.same(unknownMetrics(expr.replaceAll('tollgate_requests_total', 'tollgate_request_total'), exported), ['tollgate_request_total']);
  t.same(unknownMetrics('histogram_quantile(0.5, sum by (le) (rate(tollgate_overhead_seconds[1m])))', exported), ['tollgate_overhead_seconds'],
    'a histogram is queried through its _bucket series, not its bare name');
});

t.test('every ClickHouse query runs against the real schema', async (t) => {
  let n = 0;
  for (const { d } of dashboards) {
    for (const { where, x } of targetsOf(d, CH_DS)) {
      n++;
      const now = Date.now();
      const sql = forClickHouse(x.rawSql ?? '', variableValues(d), now - 86_400_000, now);
      try {
        const rows = await store.query<Record<string, unknown>>(sql);
        t.ok(rows.length > 0, `${where}: returns rows`);
      } catch (err) {
        t.fail(`${where}: ${(err as Error).message}\n${sql}`);
      }
    }
  }
  t.ok(n >= 15, `${n} ClickHouse queries`);
  // The panels that read the hourly rollup count whole hours: the range's first hour is in it (a filter on the hour
  // bucket itself left out an hour that began before the range, so a range inside one hour, "last 1 minute", was empty).
  let hourly = 0;
  for (const { d } of dashboards) {
    for (const { where, x } of targetsOf(d, CH_DS)) {
      if (!(x.rawSql ?? '').includes('usage_hourly')) continue;
      hourly++;
      const now = Date.now();
      const rows = await store.query<Record<string, unknown>>(forClickHouse(x.rawSql ?? '', variableValues(d), now - 60_000, now));
      t.ok(rows.length > 0, `${where}: the last minute's hour has rows`);
    }
  }
  t.ok(hourly >= 5, `${hourly} queries of the hourly rollup`);
  t.throws(() => forClickHouse('SELECT 1 WHERE $__timeFilterz(ts)', new Map(), 0, 0), /unknown macro/, 'an unknown macro is an error');
  t.throws(() => forClickHouse('SELECT 1 WHERE x = $nope', new Map(), 0, 0), /unknown variable/, 'so is an unknown variable');
});

// A request refused before routing (bad JSON, an unknown model) is a `request` row with provider `_other` that made no
// upstream call: the panels of upstream calls and spend per provider counted it as one (a failed call, in
// `upstream_calls`), under a provider `_other`.
t.test('the panels of upstream calls leave out requests refused before routing (provider _other)', async (t) => {
  const other = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('requests')} FINAL WHERE kind = 'request' AND provider = '_other'`);
  t.equal(Number(other[0]!.n), 1, 'the traffic has one such row');
  let n = 0;
  for (const { d } of dashboards) {
    for (const { where, x } of targetsOf(d, CH_DS)) {
      const sql = x.rawSql ?? '';
      // Upstream calls (and pings): the kinds without the client's `combo` rows.
      if (!/kind IN \('request', 'attempt'/.test(sql)) continue;
      n++;
      const now = Date.now();
      const rows = await store.query<Record<string, unknown>>(forClickHouse(sql, variableValues(d), now - 86_400_000, now));
      t.same(rows.filter((r) => r.provider === '_other' || r.model === '_other'), [], `${where}: no row for _other`);
    }
  }
  t.ok(n >= 4, `${n} panels of upstream calls`);
});

t.test('docs/observability.md answers for every dashboard and panel', async (t) => {
  const lines = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8').split('\n');
  const start = lines.indexOf('## Dashboards');
  t.ok(start >= 0, 'has a Dashboards section');
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  const own = lines.slice(start, end < 0 ? undefined : end).join('\n');
  for (const { file, d } of dashboards) {
    t.ok(own.includes(`(\`dashboards/${file}\``), `${file} is listed`);
    for (const p of panelsOf(d)) t.match(own, `- **${p.title}**: `, `${d.uid} / ${p.title}: the question it answers`);
  }
});
