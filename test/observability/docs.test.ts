// docs/observability.md stays true: every metric family the gateway emits has a row there (with its type and label
// names), and every tollgate_/gen_ai_ name the page mentions is emitted (so a renamed metric fails both ways); every
// ClickHouse table has a section with its engine, keys and a row per column with its type; every span attribute
// (names.ts ATTR, and whatever a real span carries) has a row with its type, and every attribute row names a real one.
// Each check is a pure function over (doc, what the app really has); the last subtests run the same functions on
// mutated inputs to show that each one catches what it is for.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { request } from 'undici';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { FAKE_USAGE, fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { Metrics } from '../../src/telemetry/metrics.js';

const IDLE = { rows: 0, bytes: 0, oldestMs: null, up: true };
import { ATTR } from '../../src/telemetry/names.js';

const DOC = readFileSync(resolve(import.meta.dirname, '../../docs/observability.md'), 'utf8');

// ---- the checks (pure) -------------------------------------------------------------------------------------------

/** The body of the `## title` section, up to the next `## ` heading. */
function section(doc: string, title: string): string {
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l.trim() === `## ${title}`);
  if (start < 0) return '';
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The `### ` subsections of a section, by heading line. */
function subsections(text: string): { heading: string; body: string }[] {
  const out: { heading: string; body: string }[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('### ')) out.push({ heading: line, body: '' });
    else if (out.length > 0) out[out.length - 1]!.body += `${line}\n`;
  }
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `name` occurs as a whole name: not inside a longer metric, label, column or attribute name. */
function mentions(text: string, name: string): boolean {
  return new RegExp(`(?<![\\w.])${escape(name)}(?![\\w]|\\.\\w)`).test(text);
}

/** The cells of the table row whose first cell is `name` in backticks; null when there is none. */
function row(text: string, name: string): string[] | null {
  const line = text.split('\n').find((l) => l.startsWith(`| \`${name}\` |`));
  return line === undefined ? null : line.split('|').slice(1, -1).map((c) => c.trim());
}

interface Family {
  readonly name: string;
  readonly type: string;
  readonly labels: Set<string>;
  samples: number;
  readonly sampleNames: Set<string>;
}

/** Metric families of a Prometheus exposition (every `# TYPE` line), with the label names seen on their samples. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) families.set(m[1]!, { name: m[1]!, type: m[2]!, labels: new Set(), samples: 0, sampleNames: new Set() });
  }
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!m) continue;
    const sample = m[1]!;
    const base = sample.replace(/_(bucket|sum|count)$/, '');
    const f = families.get(sample) ?? (families.get(base)?.type === 'histogram' ? families.get(base) : undefined);
    if (!f) continue;
    f.samples++;
    f.sampleNames.add(sample);
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) if (l[1] !== 'le') f.labels.add(l[1]!);
  }
  return families;
}

/** Families without a row in the metrics section, or whose row states another type or misses a label name. */
function metricProblems(metricsDoc: string, families: Iterable<Family>): string[] {
  const problems: string[] = [];
  for (const f of families) {
    const cells = row(metricsDoc, f.name);
    if (cells === null) {
      problems.push(`${f.name}: no row`);
      continue;
    }
    if (cells[1] !== f.type) problems.push(`${f.name}: type is ${f.type}, the row says ${cells[1]}`);
    for (const l of f.labels) if (!cells[2]!.includes(`\`${l}\``)) problems.push(`${f.name}: label ${l} not in the row`);
  }
  return problems;
}

/** tollgate_/gen_ai_ names the page mentions that are neither a family, a sample nor a label name the app emits. */
function unemitted(doc: string, emitted: ReadonlySet<string>): string[] {
  const named = new Set([...doc.matchAll(/(?<![\w.])((?:tollgate|gen_ai)_[a-z0-9_]+)/g)].map((m) => m[1]!));
  return [...named].filter((n) => !emitted.has(n)).sort();
}

function emittedNames(families: Iterable<Family>): Set<string> {
  const names = new Set<string>();
  for (const f of families) {
    names.add(f.name);
    for (const s of f.sampleNames) names.add(s);
    for (const l of f.labels) names.add(l);
  }
  return names;
}

interface TableInfo {
  readonly name: string;
  readonly engine: string;
  readonly partition_key: string;
  readonly sorting_key: string;
}
interface ColumnInfo {
  readonly table: string;
  readonly name: string;
  readonly type: string;
}

/**
 * Every table has a `###` subsection naming it in backticks, with its engine, partition and sort keys; every column of
 * a stored table has a row with its exact type; a view's columns are at least named in its subsection.
 */
function tableProblems(chDoc: string, tables: readonly TableInfo[], columns: readonly ColumnInfo[]): string[] {
  const problems: string[] = [];
  const subs = subsections(chDoc);
  const bodyOf = (table: string) => subs.find((s) => s.heading.includes(`\`${table}\``))?.body ?? null;
  for (const tb of tables) {
    const body = bodyOf(tb.name);
    if (body === null) {
      problems.push(`${tb.name}: no section`);
      continue;
    }
    if (!mentions(body, tb.engine)) problems.push(`${tb.name}: engine ${tb.engine} not stated`);
    if (tb.engine === 'MaterializedView') continue;
    const order = tb.sorting_key.includes(',') ? `ORDER BY (${tb.sorting_key})` : `ORDER BY ${tb.sorting_key}`;
    if (!body.includes(order)) problems.push(`${tb.name}: ${order} not stated`);
    const partition = tb.partition_key === '' ? 'not partitioned' : `PARTITION BY ${tb.partition_key}`;
    if (!body.includes(partition)) problems.push(`${tb.name}: ${partition} not stated`);
  }
  for (const c of columns) {
    const tb = tables.find((x) => x.name === c.table);
    const body = bodyOf(c.table);
    if (body === null) {
      if (!tb) problems.push(`${c.table}.${c.name}: no section`);
      continue;
    }
    if (tb?.engine === 'MaterializedView') {
      if (!mentions(body, c.name)) problems.push(`${c.table}.${c.name}: not named`);
      continue;
    }
    const cells = row(body, c.name);
    if (cells === null) problems.push(`${c.table}.${c.name}: no row`);
    else if (cells[1] !== c.type) problems.push(`${c.table}.${c.name}: type is ${c.type}, the row says ${cells[1]}`);
  }
  return problems;
}

type AttrValue = string | number | boolean | readonly unknown[];

/** The doc's name for the type of an attribute value; an integer may be documented as `int` or `double`. */
function attrTypeOk(documented: string, v: AttrValue): boolean {
  if (Array.isArray(v)) return documented === 'string[]';
  if (typeof v === 'number') return documented === 'double' || (documented === 'int' && Number.isInteger(v));
  return documented === typeof v;
}

/**
 * Every attribute name (ATTR and the attributes real spans carry) has a row in the spans section, with a type that
 * fits every value seen; every attribute row names one of them.
 */
function attrProblems(spansDoc: string, names: Iterable<string>, seen: ReadonlyMap<string, AttrValue[]>): string[] {
  const problems: string[] = [];
  const known = new Set([...names, ...seen.keys()]);
  for (const a of known) {
    const cells = row(spansDoc, a);
    if (cells === null) {
      problems.push(`${a}: no row`);
      continue;
    }
    for (const v of seen.get(a) ?? []) {
      if (!attrTypeOk(cells[1]!, v)) {
        problems.push(`${a}: the row says ${cells[1]}, a span has ${JSON.stringify(v)}`);
        break;
      }
    }
  }
  for (const m of spansDoc.matchAll(/^\| `([a-z_]+(?:\.[a-z_]+)+)` \|/gm)) if (!known.has(m[1]!)) problems.push(`${m[1]}: documented, but no such attribute`);
  return problems;
}

// ---- a real app ----------------------------------------------------------------------------------------------------

// A mock provider with a quota (the quota gauges), budgets (the budget gauges), and a combo whose first member (a fake
// OpenAI upstream) fails once with a 500 (an attempt failure and a cooldown) before the mock answers; a fake Anthropic
// upstream whose answer ran a web search (the search counter).
const fake = await startFakeOpenAI(t);
const anthropic = await startFakeAnthropic(t);
anthropic.next({ kind: 'ok', usage: { ...FAKE_USAGE, web_searches: 1 } });
// OpenAI's rate-limit headers, so the provider-reported gauges have samples too (docs/quota.md)
fake.setResponseHeaders({ 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '900', 'x-ratelimit-reset-tokens': '1m0s' });
const gw = await startApp(t, {
  providers: {
    demo: { ...DEMO_PROVIDER, quota: { kind: 'daily_tokens', limit: 1_000_000 } },
    fake: fakeProvider(fake.baseUrl, { models: { m: { kind: 'llm' } } }),
    anth: fakeAnthropicProvider(anthropic.url),
  },
  budgets: { daily_usd: 100, monthly_usd: 1000 },
  combos: { duo: { strategy: 'fallback', models: ['fake/m', 'demo/echo-1'] } },
});
fake.next({ kind: 'error', status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
const statuses: number[] = [];
for (const [model, stream] of [['demo/echo-1', false], ['demo/echo-1', true], ['duo', false]] as const) {
  const r = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  statuses.push(r.statusCode);
  await r.body.dump();
}
{
  const r = await request(`${gw.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'anth/claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'search' }] }),
  });
  statuses.push(r.statusCode);
  await r.body.dump();
}
await gw.flush();
const scrape = async () => {
  const r = await request(`${gw.url}/metrics`);
  return r.body.text();
};
await scrape(); // the first scrape refreshes the budget state that the budget-limit gauge reads
const appFamilies = parseExposition(await scrape());

// Process metrics: startApp turns them off; main.ts builds the app with the default, which adds them to the same
// registry. They are the difference between the Metrics class with its defaults and without them.
const plain = parseExposition(await new Metrics(() => IDLE, { processMetrics: false }).registry.metrics());
const processFamilies = [...parseExposition(await new Metrics(() => IDLE).registry.metrics()).values()].filter((f) => !plain.has(f.name));
const families = [...appFamilies.values(), ...processFamilies];
const emitted = emittedNames(families);

const store = gw.app.tollgate.store;
const tables = await store.query<TableInfo>(
  'SELECT name, engine, partition_key, sorting_key FROM system.tables WHERE database = {db:String} ORDER BY name',
  { db: store.database },
);
const columns = await store.query<ColumnInfo>(
  'SELECT table, name, type FROM system.columns WHERE database = {db:String} ORDER BY table, position',
  { db: store.database },
);

const seenAttrs = new Map<string, AttrValue[]>();
for (const s of gw.spans.getFinishedSpans()) {
  for (const [k, v] of Object.entries(s.attributes)) if (v !== undefined) seenAttrs.set(k, [...(seenAttrs.get(k) ?? []), v as AttrValue]);
}

const METRICS_DOC = section(DOC, 'Metrics');
const SPANS_DOC = section(DOC, 'Spans');
const TABLES_DOC = section(DOC, 'ClickHouse tables');

// ---- the doc against the app ---------------------------------------------------------------------------------------

t.test('the app emits what this test relies on', async (t) => {
  t.same(statuses, [200, 200, 200, 200], 'unary, streamed, combo and searching requests answered');
  t.ok(METRICS_DOC && SPANS_DOC && TABLES_DOC, 'the three sections exist');
  t.ok(processFamilies.length >= 20, `${processFamilies.length} process families`);
  t.ok(processFamilies.every((f) => /^(process|nodejs)_/.test(f.name)), 'process families are process_* and nodejs_*');
  // Every gateway family has samples (so its label names are checked), except pings, which need a rolling window.
  const silent = [...appFamilies.values()].filter((f) => /^(tollgate|gen_ai)_/.test(f.name) && f.samples === 0).map((f) => f.name);
  t.same(silent, ['tollgate_keepalive_pings_total'], 'families without samples');
  t.ok(appFamilies.get('tollgate_cooldowns_total')?.labels.has('reason'), 'the failed attempt started a cooldown');
  for (const tb of ['requests', 'usage_hourly', 'usage_hourly_mv', 'alerts', 'alert_deliveries', 'schema_migrations']) {
    t.ok(tables.some((x) => x.name === tb), `table ${tb}`);
  }
  t.ok(columns.length >= 60, `${columns.length} columns`);
  const kinds = gw.spans.getFinishedSpans().map((s) => `${s.kind}:${s.name}`).sort();
  // SpanKind: 1 SERVER, 2 CLIENT. Three direct requests (one call each), one combo request with two attempts.
  t.same(kinds, ['1:chat anth/claude-haiku-4-5', '1:chat demo/echo-1', '1:chat demo/echo-1', '1:chat duo', '2:POST', '2:POST', '2:POST', '2:POST', '2:POST']);
  const combo = gw.spans.getFinishedSpans().find((s) => s.name === 'chat duo');
  t.equal(combo?.attributes['gen_ai.provider.name'], 'demo', "the combo's span names the provider that answered, as telemetry.md says of every request span");
});

t.test('every metric family the app emits has a row with its type and labels', async (t) => {
  t.same(metricProblems(METRICS_DOC, families), []);
});

t.test('every tollgate_/gen_ai_ name the doc mentions is emitted', async (t) => {
  t.same(unemitted(DOC, emitted), []);
});

t.test('every ClickHouse table and column is documented with its engine, keys and types', async (t) => {
  t.same(tableProblems(TABLES_DOC, tables, columns), []);
});

t.test('every span attribute is documented, with its type', async (t) => {
  t.same(attrProblems(SPANS_DOC, Object.values(ATTR), seenAttrs), []);
});

// ---- each check can fail ---------------------------------------------------------------------------------------------

t.test('mentions() matches whole names only', async (t) => {
  t.ok(mentions('a `nodejs_active_resources` b', 'nodejs_active_resources'));
  t.notOk(mentions('`nodejs_active_resources_total`', 'nodejs_active_resources'));
  t.notOk(mentions('`tollgate.usage.input_tokens`', 'gen_ai.usage.input_tokens'));
  t.notOk(mentions('`tollgate.usage.source`', 'tollgate.usage'));
});

t.test('a metric family missing from the doc, or with another type or label, is reported', async (t) => {
  const fakeFamily: Family = { name: 'tollgate_fake_total', type: 'counter', labels: new Set(), samples: 1, sampleNames: new Set(['tollgate_fake_total']) };
  t.same(metricProblems(METRICS_DOC, [...families, fakeFamily]), ['tollgate_fake_total: no row']);
  const requests = appFamilies.get('tollgate_requests_total')!;
  t.same(metricProblems(METRICS_DOC, [{ ...requests, type: 'gauge' }]), ['tollgate_requests_total: type is gauge, the row says counter']);
  t.same(metricProblems(METRICS_DOC, [{ ...requests, labels: new Set([...requests.labels, 'tenant']) }]), ['tollgate_requests_total: label tenant not in the row']);
  const gc = processFamilies.find((f) => f.name === 'nodejs_gc_duration_seconds');
  if (gc) t.same(metricProblems(METRICS_DOC.replace('| `nodejs_gc_duration_seconds` |', '| `nodejs_gc_seconds` |'), [gc]), ['nodejs_gc_duration_seconds: no row']);
});

t.test('a renamed metric fails both ways', async (t) => {
  // The app renames it: the doc's old name is no longer emitted, and the new family has no row.
  const renamed = families.map((f) => (f.name === 'tollgate_cost_usd_total' ? { ...f, name: 'tollgate_cost_dollars_total', sampleNames: new Set(['tollgate_cost_dollars_total']) } : f));
  t.same(metricProblems(METRICS_DOC, renamed), ['tollgate_cost_dollars_total: no row']);
  t.same(unemitted(DOC, emittedNames(renamed)), ['tollgate_cost_usd_total']);
  // The doc names something that does not exist.
  t.same(unemitted(`${DOC}\nAlso \`tollgate_fake_total\` and gen_ai_fake_label.\n`, emitted), ['gen_ai_fake_label', 'tollgate_fake_total']);
});

t.test('a table, column, type, engine or key the doc does not state is reported', async (t) => {
  t.same(tableProblems(TABLES_DOC, tables, [...columns, { table: 'requests', name: 'tenant', type: 'String' }]), ['requests.tenant: no row']);
  t.same(
    tableProblems(TABLES_DOC, tables, columns.map((c) => (c.table === 'requests' && c.name === 'cost' ? { ...c, type: 'Decimal(38, 12)' } : c))),
    ['requests.cost: type is Decimal(38, 12), the row says Decimal(18, 12)'],
  );
  t.same(
    tableProblems(TABLES_DOC, [...tables, { name: 'sessions', engine: 'MergeTree', partition_key: '', sorting_key: 'id' }], [...columns, { table: 'sessions', name: 'id', type: 'UUID' }]),
    ['sessions: no section'],
  );
  t.same(
    tableProblems(TABLES_DOC, tables.map((x) => (x.name === 'alerts' ? { ...x, engine: 'MergeTree', sorting_key: 'fired_at, id' } : x)), columns),
    ['alerts: engine MergeTree not stated', 'alerts: ORDER BY (fired_at, id) not stated'],
  );
  t.same(
    tableProblems(TABLES_DOC, tables, [...columns, { table: 'usage_hourly_mv', name: 'tenant', type: 'String' }]),
    ['usage_hourly_mv.tenant: not named'],
  );
});

t.test('a span attribute the doc does not state, or states wrongly, is reported', async (t) => {
  t.same(attrProblems(SPANS_DOC, [...Object.values(ATTR), 'tollgate.tenant'], seenAttrs), ['tollgate.tenant: no row']);
  // An attribute set literally on a span (not through ATTR) is caught from the spans themselves.
  t.same(attrProblems(SPANS_DOC, Object.values(ATTR), new Map([...seenAttrs, ['tollgate.region', ['eu']]])), ['tollgate.region: no row']);
  t.same(attrProblems(SPANS_DOC, Object.values(ATTR), new Map([...seenAttrs, ['tollgate.attempt', [1, 1.5]]])), ['tollgate.attempt: the row says int, a span has 1.5']);
  // A renamed attribute: its row now names nothing, and the new name has no row.
  const names = Object.values(ATTR).map((a) => (a === ATTR.connection ? 'tollgate.connection_name' : a));
  const seen = new Map([...seenAttrs].filter(([k]) => k !== ATTR.connection));
  t.same(attrProblems(SPANS_DOC, names, seen), ['tollgate.connection_name: no row', 'tollgate.connection: documented, but no such attribute']);
});
