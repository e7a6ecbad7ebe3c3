// The store against the real embedded ClickHouse (chdb): migrations, idempotent rows (DESIGN.md decision 3),
// nullable usage buckets (decision 4), exact Decimal money, and the per-model usage query. One data directory for
// the whole file: chdb binds one per process. store.server.test.ts runs the same cases against a ClickHouse server.

import t from 'tap';
import { settingsClause, type Store } from '../../src/store/client.js';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { aggregate } from '../../src/store/aggregate.js';
import { toRow } from '../../src/store/rows.js';
import { makeRecord, type RecordInput, type UsageRecord } from '../../src/ledger/record.js';
import { computeCost } from '../../src/ledger/cost.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import type { ProviderConfig } from '../../src/config/types.js';
import { openTestStore } from '../helpers/store-paths.js';

const store: Store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-store-' });

const T0 = Date.UTC(2024, 4, 15, 12, 0, 0, 0); // 2024-05-15T12:00:00.000Z

function record(over: Partial<RecordInput> = {}): UsageRecord {
  const startedAt = over.startedAt ?? T0;
  return makeRecord({
    requestId: uuidv7(startedAt),
    startedAt,
    endedAt: startedAt + 120,
    endpoint: 'chat.completions',
    provider: 'openai',
    providerGroup: 'paid',
    model: 'openai/gpt-4o',
    requestedModel: 'openai/gpt-4o',
    modelKnown: true,
    apiKeyName: 'admin',
    stream: false,
    status: 'success',
    httpStatus: 200,
    errorType: '',
    usage: { input: 100, cached: 20, cacheWrite: null, output: 30, reasoning: 5 },
    usageSource: 'reported',
    cost: { cost: 0.0005, listCost: 0.0005 },
    latency: { kind: 'unary', totalMs: 120 },
    upstreamMs: 100,
    ...over,
  });
}

const requests = () => store.t('requests');

async function one<T>(sql: string, params: Record<string, unknown> = {}): Promise<T> {
  const rows = await store.query<T>(sql, params);
  if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}: ${sql}`);
  return rows[0]!;
}

t.test('migrate creates the database and tables, and is idempotent', async (t) => {
  const dbsBefore = await store.query<{ name: string }>(`SELECT name FROM system.databases WHERE name = 'tollgate'`);
  t.same(dbsBefore, [], 'fresh data directory: no database yet');

  t.same(await migrate(store), MIGRATIONS.map((m) => m.version), 'first run applies every shipped version');

  const dbs = await store.query<{ name: string }>(`SELECT name FROM system.databases WHERE name = 'tollgate'`);
  t.same(dbs, [{ name: 'tollgate' }]);
  const tables = await store.query<{ name: string; engine: string }>(
    `SELECT name, engine FROM system.tables WHERE database = 'tollgate' ORDER BY name`,
  );
  t.same(
    tables,
    [
      { name: 'alert_deliveries', engine: 'MergeTree' },
      { name: 'alerts', engine: 'ReplacingMergeTree' },
      { name: 'claims', engine: 'MergeTree' },
      { name: 'requests', engine: 'ReplacingMergeTree' },
      { name: 'schema_migrations', engine: 'ReplacingMergeTree' },
      { name: 'usage_daily', engine: 'AggregatingMergeTree' },
      { name: 'usage_daily_mv', engine: 'MaterializedView' },
      { name: 'usage_hourly', engine: 'AggregatingMergeTree' },
      { name: 'usage_hourly_mv', engine: 'MaterializedView' },
    ],
    'requests and schema_migrations (ReplacingMergeTree), the hourly and daily rollups and their views, alerts and deliveries, claims',
  );

  const cols = await store.query<{ name: string; type: string }>(
    `SELECT name, type FROM system.columns WHERE database = 'tollgate' AND table = 'requests' ORDER BY position`,
  );
  const types = Object.fromEntries(cols.map((c) => [c.name, c.type]));
  t.equal(types.request_id, 'UUID');
  t.equal(types.cost, 'Decimal(18, 12)');
  t.equal(types.list_cost, 'Decimal(18, 12)');
  for (const b of ['input_tokens', 'cached_tokens', 'cache_write_tokens', 'output_tokens', 'reasoning_tokens']) {
    t.equal(types[b], 'Nullable(UInt64)', `${b} is nullable`);
  }
  t.equal(types.total_tokens, 'UInt64', 'the derived total is not nullable');
  t.same(Object.keys(types).sort(), Object.keys(toRow(record())).sort(), 'the row mapping names exactly the table columns');

  t.same(await migrate(store), [], 'second run applies nothing');
  t.same(await migrate(store), [], 'third run applies nothing');

  const applied = await store.query<{ version: number; name: string; n: string }>(
    `SELECT version, name, count() OVER () AS n FROM ${store.t('schema_migrations')} FINAL ORDER BY version`,
  );
  t.same(applied.map((r) => [Number(r.version), r.name]), [[1, 'requests'], [2, 'routing'], [3, 'rollups'], [4, 'alerts'], [5, 'alert claims'], [6, 'claims'], [7, 'durable parts'], [8, 'requests sorted by hour'], [20, 'price source'], [21, 'trace id'], [22, 'unpriced rows in the rollup'], [23, 'daily rollup'], [24, 'hour-long cache writes'], [25, 'web searches'], [26, 'service tier'], [27, 'audio tokens'], [28, 'dispatched calls']], 'one row per version');
  t.equal(Number(applied[0]!.n), MIGRATIONS.length);
  t.equal(types.kind, 'LowCardinality(String)');
  t.equal(types.parent_id, 'Nullable(UUID)', 'parent_id: null for client requests');
});

t.test('migrate applies only versions it has not applied, in version order', async (t) => {
  const extra = [
    { version: 1001, name: 'three', statements: (db: string) => [`CREATE TABLE IF NOT EXISTS ${db}.m_three (x UInt8) ENGINE = MergeTree ORDER BY x`] },
    { version: 1000, name: 'two', statements: (db: string) => [`CREATE TABLE IF NOT EXISTS ${db}.m_two (x UInt8) ENGINE = MergeTree ORDER BY x`] },
  ];
  t.same(await migrate(store, [...MIGRATIONS, ...extra]), [1000, 1001], 'new versions applied in order; shipped ones skipped');
  t.same(await migrate(store, [...MIGRATIONS, ...extra]), []);
  const versions = await store.query<{ version: number }>(`SELECT version FROM ${store.t('schema_migrations')} FINAL ORDER BY version`);
  t.same(versions.map((r) => Number(r.version)), [...MIGRATIONS.map((m) => m.version), 1000, 1001]);
  const tables = await store.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = 'tollgate' AND name LIKE 'm\\_%' ORDER BY name`);
  t.same(tables.map((r) => r.name), ['m_three', 'm_two']);
});

t.test('the same request_id inserted twice is counted once (FINAL)', async (t) => {
  const r = record({ startedAt: T0 + 1000, usage: { input: 7, cached: null, cacheWrite: null, output: 11, reasoning: null }, cost: { cost: 0.000123, listCost: 0.000123 } });
  const row = toRow(r);
  await store.insert('requests', [row]);
  await store.insert('requests', [row]); // a retried insert
  await store.insert('requests', [row, row]); // and a batch that carries it twice
  const agg = await one<{ n: string; tokens: string; cost: string }>(
    `SELECT count() AS n, sum(total_tokens) AS tokens, toString(sum(cost)) AS cost FROM ${requests()} FINAL WHERE request_id = {id:UUID}`,
    { id: r.requestId },
  );
  t.equal(Number(agg.n), 1, 'one row with FINAL');
  t.equal(Number(agg.tokens), 18, 'tokens counted once');
  t.equal(Number(agg.cost), 0.000123, 'cost counted once');
  const raw = await one<{ n: string }>(`SELECT count() AS n FROM ${requests()} WHERE request_id = {id:UUID}`, { id: r.requestId });
  t.ok(Number(raw.n) >= 1 && Number(raw.n) <= 4, `without FINAL the duplicates may still be visible (${raw.n})`);
});

t.test('null usage buckets read back as null, zero as zero', async (t) => {
  const withNull = record({ startedAt: T0 + 2000, usage: { input: 10, cached: null, cacheWrite: null, output: 4, reasoning: null } });
  const withZero = record({ startedAt: T0 + 2001, usage: { input: 10, cached: 0, cacheWrite: 0, output: 4, reasoning: 0 } });
  const none = record({ startedAt: T0 + 2002, status: 'failure', httpStatus: 429, errorType: '429', usageSource: 'none', usage: { input: null, cached: null, cacheWrite: null, output: null, reasoning: null }, cost: { cost: 0, listCost: 0 } });
  await store.insert('requests', [toRow(withNull), toRow(withZero), toRow(none)]);
  type B = { id: string; input_tokens: unknown; cached_tokens: unknown; cache_write_tokens: unknown; output_tokens: unknown; reasoning_tokens: unknown; total_tokens: unknown; usage_source: string };
  const rows = await store.query<B>(
    `SELECT toString(request_id) AS id, input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens, total_tokens, usage_source
     FROM ${requests()} FINAL WHERE request_id IN ({a:UUID}, {b:UUID}, {c:UUID}) ORDER BY ts`,
    { a: withNull.requestId, b: withZero.requestId, c: none.requestId },
  );
  const buckets = (r: B) => [r.input_tokens, r.cached_tokens, r.cache_write_tokens, r.output_tokens, r.reasoning_tokens, r.total_tokens].map((v) => (v === null ? null : Number(v)));
  t.equal(rows.length, 3);
  t.equal(rows[0]!.id, withNull.requestId);
  t.same(buckets(rows[0]!), [10, null, null, 4, null, 14], 'null stays null');
  t.same(buckets(rows[1]!), [10, 0, 0, 4, 0, 14], 'zero stays zero');
  t.same(buckets(rows[2]!), [null, null, null, null, null, 0], 'no usage: every bucket null, total 0');
  t.equal(rows[2]!.usage_source, 'none');
  const counts = await one<{ reported_cached: string; null_cached: string }>(
    `SELECT countIf(cached_tokens IS NOT NULL) AS reported_cached, countIf(cached_tokens IS NULL) AS null_cached
     FROM ${requests()} FINAL WHERE request_id IN ({a:UUID}, {b:UUID}, {c:UUID})`,
    { a: withNull.requestId, b: withZero.requestId, c: none.requestId },
  );
  t.same([Number(counts.reported_cached), Number(counts.null_cached)], [1, 2], 'SQL can tell "not reported" from zero');
});

t.test('a row round-trips every column', async (t) => {
  const r = record({
    startedAt: T0 + 3000, endedAt: T0 + 3456, stream: true, latency: { kind: 'stream', ttftMs: 87.5, totalMs: 456.25 }, upstreamMs: 400.5,
    requestedModel: 'gpt-4o', apiKeyName: 'ci', providerGroup: 'paid',
  });
  await store.insert('requests', [toRow(r)]);
  const row = await one<Record<string, unknown>>(
    `SELECT toString(request_id) AS id, toUnixTimestamp64Milli(ts) AS start_ms, toUnixTimestamp64Milli(end_ts) AS end_ms, endpoint, provider,
            provider_group, model, requested_model, api_key_name, stream, status, http_status, error_type, duration_ms, ttft_ms, upstream_ms
     FROM ${requests()} FINAL WHERE request_id = {id:UUID}`,
    { id: r.requestId },
  );
  t.same(
    { ...row, start_ms: Number(row.start_ms), end_ms: Number(row.end_ms) },
    {
      id: r.requestId, start_ms: T0 + 3000, end_ms: T0 + 3456, endpoint: 'chat.completions', provider: 'openai', provider_group: 'paid',
      model: 'openai/gpt-4o', requested_model: 'gpt-4o', api_key_name: 'ci', stream: true, status: 'success', http_status: 200, error_type: '',
      duration_ms: 456.25, ttft_ms: 87.5, upstream_ms: 400.5,
    },
  );
  const unary = record({ startedAt: T0 + 3001, upstreamMs: null });
  await store.insert('requests', [toRow(unary)]);
  const u = await one<{ ttft_ms: unknown; upstream_ms: unknown }>(`SELECT ttft_ms, upstream_ms FROM ${requests()} FINAL WHERE request_id = {id:UUID}`, { id: unary.requestId });
  t.same(u, { ttft_ms: null, upstream_ms: null }, 'unary: no ttft; no upstream call: null');
});

t.test('text of any kind round-trips through one insert of many rows: quotes, backslashes, escapes, non-ASCII, SQL-like', async (t) => {
  // The embedded engine gets the statement and the rows as one text (Store.insertLines): nothing in a row may be
  // read as part of the statement, and every character comes back as written.
  const texts = ['plain', 'a "quoted" \\ back\\slash', 'line\nbreak\ttab\r', 'ünïcödé 中文 👋🏽', "FORMAT CSV; DROP TABLE x; --", '{"json":1}', ' padded ', 'ends with ;'];
  const rows = texts.map((m, i) => toRow(record({ startedAt: T0 + 7000 + i, requestedModel: m, apiKeyName: `k${i}` })));
  await store.insertLines('requests', [...rows.map((r) => JSON.stringify(r)), ...Array.from({ length: 500 }, (_, i) => JSON.stringify(toRow(record({ startedAt: T0 + 8000 + i }))))]);
  const back = await store.query<{ m: string; k: string }>(
    `SELECT requested_model AS m, api_key_name AS k FROM ${requests()} FINAL WHERE request_id IN {ids:Array(UUID)} ORDER BY ts`,
    { ids: rows.map((r) => r.request_id) },
  );
  t.same(back.map((r) => r.m), texts, 'every text as written');
  t.same(back.map((r) => r.k), texts.map((_, i) => `k${i}`), 'and the column after it');
  const [n] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${requests()} FINAL WHERE ts >= fromUnixTimestamp64Milli({a:Int64}, 'UTC') AND ts < fromUnixTimestamp64Milli({b:Int64}, 'UTC')`,
    { a: T0 + 8000, b: T0 + 8500 },
  );
  t.equal(Number(n!.n), 500, 'the 500 rows after them, each once');
});

t.test('Decimal cost: toRow round-trips cost and list_cost exactly', async (t) => {
  const provider = { group: 'paid', price: { input: 2.5, output: 10, cached: 1.25 }, models: {} } as unknown as ProviderConfig;
  const sub = { ...provider, group: 'subscription' } as ProviderConfig;
  const cases = [
    computeCost(provider, 'gpt-4o', { input: 8, cached: 3, cacheWrite: null, output: 5, reasoning: 2 }), // (8*2.5 + 3*1.25 + 5*10 + 2*10) / 1e6 = 0.00009375
    computeCost(provider, 'gpt-4o', { input: 1, cached: null, cacheWrite: null, output: null, reasoning: null }), // 0.0000025
    computeCost(provider, 'gpt-4o', { input: 123456789, cached: 987654, cacheWrite: null, output: 4321, reasoning: 17 }),
    computeCost(sub, 'gpt-4o', { input: 1000, cached: null, cacheWrite: null, output: 1000, reasoning: null }),
    { cost: 0.000000000001, listCost: 0.123456789012 }, // the smallest unit and all twelve places
  ];
  const recs = cases.map((c, i) => record({ startedAt: T0 + 4000 + i, cost: c }));
  await store.insert('requests', recs.map(toRow));
  const rows = await store.query<{ id: string; cost: string; list_cost: string }>(
    `SELECT toString(request_id) AS id, toString(cost) AS cost, toString(list_cost) AS list_cost FROM ${requests()} FINAL
     WHERE request_id IN {ids:Array(UUID)} ORDER BY ts`,
    { ids: recs.map((r) => r.requestId) },
  );
  t.equal(rows.length, recs.length);
  rows.forEach((row, i) => {
    t.equal(row.id, recs[i]!.requestId);
    t.equal(Number(row.cost), recs[i]!.cost.cost, `cost ${i}: ${row.cost}`);
    t.equal(Number(row.list_cost), recs[i]!.cost.listCost, `list_cost ${i}: ${row.list_cost}`);
  });
  t.equal(Number(rows[0]!.cost), 0.00009375);
  t.equal(Number(rows[3]!.cost), 0, 'subscription bills nothing');
  t.equal(Number(rows[3]!.list_cost), 0.0125, 'but keeps its list cost');
  t.equal(Number(rows[4]!.cost), 1e-12, 'one pico-dollar survives');
  t.equal(Number(rows[4]!.list_cost), 0.123456789012);
});

t.test('the sum of many small costs is exact', async (t) => {
  // 0.1 and 0.2 micro-dollars alternating, 1000 rows: 500 x 1e-7 + 500 x 2e-7 = 0.00015 exactly in Decimal;
  // the same sum in floating point drifts.
  const recs = Array.from({ length: 1000 }, (_, i) =>
    record({ startedAt: Date.UTC(2024, 6, 1) + i, model: 'sum/model', provider: 'sum', cost: { cost: i % 2 ? 2e-7 : 1e-7, listCost: 0.000000123457 } }),
  );
  let float = 0;
  for (const r of recs) float += r.cost.cost;
  t.not(float, 0.00015, `floating point sum drifts (${float}), so the check below means something`);
  await store.insert('requests', recs.map(toRow));
  const agg = await one<{ n: string; cost: string; list_cost: string }>(
    `SELECT count() AS n, toString(sum(cost)) AS cost, toString(sum(list_cost)) AS list_cost FROM ${requests()} FINAL WHERE model = 'sum/model'`,
  );
  t.equal(Number(agg.n), 1000);
  t.equal(Number(agg.cost), 0.00015, `sum(cost) = ${agg.cost}`);
  t.ok(Math.abs(Number(agg.cost) - 0.00015) < 1e-12);
  t.equal(Number(agg.list_cost), 0.000123457, `sum(list_cost) = ${agg.list_cost}`);
});

/** Upstream calls, tokens and billed cost per model in [from, to), as /api/usage's byModel reads them. */
async function usageByModel(from: number, to: number) {
  const groups = await aggregate(store, { from, to, by: ['model'], filters: { kinds: ['request', 'attempt'] } });
  return groups
    .map((g) => ({ model: g.model!, requests: g.rows, tokens: g.tokens, cost: Number(g.cost.toFixed(12)) }))
    .sort((a, b) => b.tokens - a.tokens || (a.model < b.model ? -1 : 1));
}

t.test('per-model sums within [from, to) (store/aggregate.ts)', async (t) => {
  const from = Date.UTC(2024, 8, 10, 0, 0, 0, 0);
  const to = Date.UTC(2024, 8, 11, 0, 0, 0, 0);
  const u = (input: number, output: number) => ({ input, cached: null, cacheWrite: null, output, reasoning: null });
  const inside = [
    record({ startedAt: from, model: 'w/alpha', provider: 'w', usage: u(10, 5), cost: { cost: 0.000001, listCost: 0.000001 } }), // first ms: in
    record({ startedAt: from + 3_600_000, model: 'w/alpha', provider: 'w', usage: u(100, 50), cost: { cost: 0.00002, listCost: 0.00002 } }),
    record({ startedAt: to - 1, model: 'w/beta', provider: 'w', usage: u(1000, 1), cost: { cost: 0.0003, listCost: 0.0003 } }), // last ms: in
    record({ startedAt: from + 7_200_000, model: 'w/gamma', provider: 'w', providerGroup: 'free', usage: u(1, 1), cost: { cost: 0, listCost: 0.5 } }),
  ];
  const outside = [
    record({ startedAt: from - 1, model: 'w/alpha', provider: 'w', usage: u(9999, 9999), cost: { cost: 9, listCost: 9 } }),
    record({ startedAt: to, model: 'w/beta', provider: 'w', usage: u(9999, 9999), cost: { cost: 9, listCost: 9 } }),
    record({ startedAt: to + 86_400_000, model: 'w/delta', provider: 'w', usage: u(1, 1), cost: { cost: 9, listCost: 9 } }),
  ];
  const batch = [...inside, ...outside].map(toRow);
  await store.insert('requests', batch, 'per-model-batch');
  await store.insert('requests', batch, 'per-model-batch'); // the writer's retry of the same batch

  const got = await usageByModel(from, to);
  t.same(got, [
    { model: 'w/beta', requests: 1, tokens: 1001, cost: 0.0003 },
    { model: 'w/alpha', requests: 2, tokens: 165, cost: 0.000021 },
    { model: 'w/gamma', requests: 1, tokens: 2, cost: 0 },
  ], 'ordered by tokens; boundaries: from included, to excluded; retried row counted once; billed cost only');

  t.same(await usageByModel(to + 86_400_000, to + 86_400_001), [{ model: 'w/delta', requests: 1, tokens: 2, cost: 9 }], 'a one-millisecond window');
  t.same(await usageByModel(Date.UTC(2000, 0, 1), Date.UTC(2000, 0, 2)), [], 'an empty window');
  t.same(await usageByModel(to, from), [], 'an inverted window is empty');
});

t.test('a read after an awaited insert sees its rows', async (t) => {
  const base = T0 + 40 * 86_400_000;
  const records = Array.from({ length: 5 }, (_, i) => record({ startedAt: base + i }));
  for (const r of records) {
    await store.insert('requests', [toRow(r)], `lanes-${r.requestId}`);
    const ids = records.map((x) => x.requestId);
    const [{ n }] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.t('requests')} WHERE toString(request_id) IN {ids:Array(String)}`, { ids });
    t.equal(Number(n), records.indexOf(r) + 1);
  }
});

/** How many raw rows (no FINAL) carry these request ids. */
const count = async (ids: string[]) =>
  Number((await one<{ n: string }>(`SELECT count() AS n FROM ${requests()} WHERE toString(request_id) IN {ids:Array(String)}`, { ids })).n);

t.test('an insert deduplicates by its own token, and leaves no token behind for the next statement', async (t) => {
  const base = T0 + 41 * 86_400_000;
  const [a, b, c] = [0, 1, 2].map((i) => record({ startedAt: base + i }));
  await store.insertLines('requests', [JSON.stringify(toRow(a!))], 'token-left-behind');
  // The same token again: a retry of that insert, dropped whatever it carries (ClickHouse's insert deduplication).
  await store.insertLines('requests', [JSON.stringify(toRow(b!))], 'token-left-behind');
  t.equal(await count([a!.requestId, b!.requestId]), 1, 'a second insert with the same token is dropped as a retry');
  // A statement of its own (no token): had the insert's settings stayed on the session (`SET`, the embedded engine's
  // adapter for clickhouse_settings), it would carry the token above and be dropped as a retry too.
  await store.command(`INSERT INTO ${requests()} FORMAT JSONEachRow ${JSON.stringify(toRow(c!))}`);
  t.equal(await count([c!.requestId]), 1, 'a later insert without a token is not taken for a retry');
  // And an insert without a token after one with a token is its own block.
  const d = record({ startedAt: base + 3 });
  await store.insertLines('requests', [JSON.stringify(toRow(d))]);
  t.equal(await count([d.requestId]), 1, 'an insert without a token is kept');
});

t.test("a token with quotes and backslashes is the statement's own literal, and dedupes as itself", async (t) => {
  const base = T0 + 42 * 86_400_000;
  const [a, b] = [0, 1].map((i) => record({ startedAt: base + i }));
  const token = `it's a \\'token\\' -- ; SETTINGS insert_deduplicate = 0`;
  await store.insertLines('requests', [JSON.stringify(toRow(a!))], token);
  await store.insertLines('requests', [JSON.stringify(toRow(b!))], token);
  t.equal(await count([a!.requestId, b!.requestId]), 1, 'the second insert with the same token is dropped as a retry: the token was quoted whole');
  t.throws(() => settingsClause({ 'a = 1, insert_deduplicate': 0 }), /not a setting name/, 'a name that is not one is refused');
  t.equal(settingsClause({}), '', 'no settings, no clause');
});

t.test('a null for a column that is not Nullable is its default, whatever the session says, in both insert formats', async (t) => {
  const base = T0 + 43 * 86_400_000;
  const [a, b] = [0, 1].map((i) => record({ startedAt: base + i }));
  // A row as a begin marker's becomes, and as the spool's rows parsed again: nulls where the marker left columns out.
  const sparse = (r: UsageRecord) => ({ ...toRow(r), combo: null, attempt: null, auto_switched: null, kind: null });
  const columns = Object.keys(toRow(a!));
  // The embedded engine keeps a SET for its session: the insert must state the setting itself. (A server's session
  // ends with the statement: there, this stands for a profile that turned the setting off.)
  await store.command('SET input_format_null_as_default = 0');
  t.teardown(() => store.command('SET input_format_null_as_default = 1'));
  await store.insertLines('requests', [JSON.stringify(columns.map((c) => (sparse(a!) as Record<string, unknown>)[c]))], undefined, columns);
  await store.insertLines('requests', [JSON.stringify(sparse(b!))]);
  const rows = await store.query<{ kind: string; combo: string; attempt: number; auto_switched: boolean }>(
    `SELECT kind, combo, attempt, auto_switched FROM ${store.t('requests')} FINAL WHERE request_id IN ({ids:Array(UUID)}) ORDER BY ts`,
    { ids: [a!.requestId, b!.requestId] },
  );
  t.same(rows, [0, 1].map(() => ({ kind: 'request', combo: '', attempt: 0, auto_switched: false })), 'each column its default: kind\'s is request');
});
