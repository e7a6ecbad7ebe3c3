// POST /api/admin/import checks the values of the archive's rows, not only its structure (src/store/import-checks.ts):
// before, an archive whose `requests` rows had a negative cost was imported, and the day's budget spend fell by it
// (an edited archive walked around the budget); so did rows with negative token counts, a kind or status the gateway
// never writes, a time years ahead. Each archive here is a real export of this gateway with one table rewritten by the
// store engine (ClickHouse's file() over the table's Native file: the kind of edit anyone can make), and must be
// refused 400 naming the table, the rule and the rows, with nothing inserted into any table. A good archive still
// imports. Open mode (no keys): the routes need no token. Real socket, the real embedded store.

import t from 'tap';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { tarHeader } from '../../src/store/tar.js';
import { ALERT_ROW_KINDS, ALERT_SEVERITIES } from '../../src/store/import-checks.js';
import { ALERT_KINDS, type AlertKind, type Severity } from '../../src/alerts/types.js';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { clearOfDayEdges } from '../helpers/day-edge.js';
import { tempDir } from '../helpers/tmp.js';

// The budget's day must not end between the spend read before an import and the one after (the file takes ~20 s).
await clearOfDayEdges(t, 120_000);
const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER }, budgets: { daily_usd: 100 } });
const store = gw.app.tollgate.store;
const work = tempDir(t);

for (const stream of [false, true]) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', stream, messages: [{ role: 'user', content: 'hello there' }] }),
  });
  await res.text();
  if (res.status !== 200) throw new Error(`chat: ${res.status}`);
}
await gw.flush();

const exported = await fetch(`${gw.url}/api/admin/export`, { method: 'POST' });
if (exported.status !== 200) throw new Error(`export: ${exported.status}`);
const ARCHIVE = gunzipSync(Buffer.from(await exported.arrayBuffer()));

/** The entries of a tar, in order. */
function untar(tar: Buffer): [string, Buffer][] {
  const out: [string, Buffer][] = [];
  for (let at = 0; at + 512 <= tar.length && !tar.subarray(at, at + 512).every((b) => b === 0);) {
    const h = tar.subarray(at, at + 512);
    const name = h.subarray(0, 100).toString().replace(/\0.*$/s, '');
    const size = parseInt(h.subarray(124, 136).toString().replace(/\0.*$/s, ''), 8);
    out.push([name, tar.subarray(at + 512, at + 512 + size)]);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

function tar(entries: readonly [string, Buffer][]): Buffer {
  const parts = entries.flatMap(([name, data]) => [tarHeader(name, data.length, Date.now()), data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
  return Buffer.concat([...parts, Buffer.alloc(1024)]);
}

/**
 * The export with the tables in `edits` rewritten: each is a SELECT whose `{src}` is the table's exported rows (the
 * engine reads and writes the Native files), its row count in the manifest made to match.
 */
async function edited(edits: Record<string, string>, opts: { without?: { table: string; column: string } } = {}): Promise<Buffer> {
  const dir = mkdtempSync(join(work, 'edit-'));
  const entries = untar(ARCHIVE);
  const manifest = JSON.parse(entries.find(([n]) => n === 'manifest.json')![1].toString()) as { tables: Record<string, { rows: number; columns: { name: string }[] }> };
  // An archive of an earlier version: a column its table did not have yet is not in its manifest (nor in its file).
  const w = opts.without;
  if (w !== undefined) manifest.tables[w.table]!.columns = manifest.tables[w.table]!.columns.filter((c) => c.name !== w.column);
  const out = await Promise.all(entries.map(async ([name, data]): Promise<[string, Buffer]> => {
    const table = /^tables\/(\w+)\.native$/.exec(name)?.[1];
    if (table === undefined || edits[table] === undefined) return [name, data];
    const src = join(dir, `${table}.native`);
    const dst = join(dir, `${table}.edited.native`);
    writeFileSync(src, data);
    await store.command(`${edits[table]!.replaceAll('{src}', `file('${src}', 'Native')`)} INTO OUTFILE '${dst}' FORMAT Native`);
    manifest.tables[table]!.rows = Number((await store.query<{ n: string }>(`SELECT count() AS n FROM file('${dst}', 'Native')`))[0]!.n);
    return [name, readFileSync(dst)];
  }));
  return gzipSync(tar(out.map(([n, d]) => (n === 'manifest.json' ? [n, Buffer.from(JSON.stringify(manifest))] : [n, d]))));
}

async function importArchive(body: Buffer): Promise<{ status: number; code: string; message: string; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}/api/admin/import`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body });
  const parsed = (await res.json()) as Record<string, unknown> & { error?: { code: string; message: string } };
  return { status: res.status, code: parsed.error?.code ?? '', message: parsed.error?.message ?? '', body: parsed };
}

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ['requests', 'alerts', 'alert_deliveries', 'usage_hourly', 'usage_daily']) {
    const q = table.startsWith('usage_') ? `SELECT sum(rows) AS n FROM ${store.t(table)}` : `SELECT count() AS n FROM ${store.t(table)}`;
    out[table] = Number((await store.query<{ n: string }>(q))[0]!.n);
  }
  return out;
}

const dailySpent = async (): Promise<number> => ((await (await fetch(`${gw.url}/api/budgets`)).json()) as { daily: { spent: number } }).daily.spent;

/** Every row of the export again as new requests (fresh ids), with `replace` (`expr AS column, ...`) on top. */
const asNew = (replace = ''): string => `SELECT * REPLACE (generateUUIDv4(rowNumberInAllBlocks()) AS request_id${replace === '' ? '' : `, ${replace}`}) FROM {src}`;

const ROWS = (await gw.rows()).length;
const TOKENS_NOTE = '(a count of 2^63 or more: how a negative number reads in this unsigned column)';

t.test('the reproduction: new rows with a negative cost are refused, and the budget\'s spend stays as it was', async (t) => {
  t.equal(ROWS, 2, 'two requests recorded');
  const spent = await dailySpent();
  t.ok(spent > 0, `the day's spend: ${spent}`);
  const before = await counts();
  const r = await importArchive(await edited({ requests: asNew('toDecimal64(-10, 12) AS cost') }));
  t.equal(r.status, 400, JSON.stringify(r.body));
  t.equal(r.code, 'TOLLGATE_ERR_INVALID_REQUEST');
  t.equal(r.message, 'archive: table requests: 2 rows have a negative cost');
  t.equal(await dailySpent(), spent, 'the budget\'s spend is unchanged');
  t.same(await counts(), before, 'nothing inserted, in any table or rollup');
});

t.test('each rule class: refused 400 naming the table, the rule and how many rows; nothing inserted', async (t) => {
  const cases: [string, Record<string, string>, string][] = [
    ['negative money', { requests: asNew('toDecimal64(-1, 12) AS list_cost') }, 'table requests: 2 rows have a negative list_cost'],
    ['negative tokens', { requests: asNew('toInt64(-1000) AS input_tokens, toInt32(-7) AS audio_output_tokens') },
      `table requests: 2 rows have a negative input_tokens ${TOKENS_NOTE}; 2 rows have a negative audio_output_tokens (a count of 2^31 or more: how a negative number reads in this unsigned column); 2 rows have a total_tokens that is not the sum of the five token buckets`],
    ['counts each below 2^63 that sum past 2^64 (a quota read in UInt64 would wrap)', { requests: asNew('toUInt64(6148914691236517201) AS input_tokens, toUInt64(6148914691236517201) AS total_tokens') },
      'table requests: 2 rows have an input_tokens of 2^32 or more (more than any call counts); 2 rows have a total_tokens of 2^32 or more (more than any call counts); 2 rows have a total_tokens that is not the sum of the five token buckets'],
    ['a total that is not the sum of its buckets', { requests: asNew('total_tokens + 1000 AS total_tokens') },
      'table requests: 2 rows have a total_tokens that is not the sum of the five token buckets'],
    ['unknown enum values', { requests: asNew("if(stream, 'bogus', kind) AS kind, 'ok' AS status, 'guessed' AS usage_source") },
      'table requests: 1 row has a kind the gateway does not write (not one of request, combo, attempt, keepalive); 2 rows have a status the gateway does not write (not one of success, failure, aborted, interrupted); 2 rows have a usage_source the gateway does not write (not one of reported, estimated, none)'],
    ['a provider group and a price source the gateway does not write', { requests: asNew("'premium' AS provider_group, 'guess' AS price_source") },
      "table requests: 2 rows have a provider_group the gateway does not write (not one of '', subscription, paid, free); 2 rows have a price_source the gateway does not write (not one of config, catalog@<version>, genai-prices@<version>, none, '')"],
    ['a time decades ahead', { requests: asNew('ts + toIntervalYear(30) AS ts, end_ts + toIntervalYear(30) AS end_ts') },
      "table requests: 2 rows have a ts more than a day after the import's time; 2 rows have an end_ts more than a day after the import's time"],
    ['non-finite and negative durations', { requests: asNew('nan AS duration_ms, toNullable(-inf) AS ttft_ms, toNullable(toFloat64(-5)) AS upstream_ms') },
      'table requests: 2 rows have a negative or non-finite duration_ms; 2 rows have a negative or non-finite ttft_ms; 2 rows have a negative or non-finite upstream_ms'],
    ['an empty request id', { requests: "SELECT * REPLACE (toUUID('00000000-0000-0000-0000-000000000000') AS request_id) FROM {src} LIMIT 1" },
      'table requests: 1 row has an empty request_id (the nil UUID)'],
  ];
  for (const [name, edits, message] of cases) {
    const spent = await dailySpent();
    const before = await counts();
    const r = await importArchive(await edited(edits));
    t.equal(r.status, 400, `${name}: 400 (${JSON.stringify(r.body)})`);
    t.equal(r.code, 'TOLLGATE_ERR_INVALID_REQUEST', `${name}: code`);
    t.equal(r.message, `archive: ${message}`, `${name}: message`);
    t.same(await counts(), before, `${name}: nothing inserted`);
    t.equal(await dailySpent(), spent, `${name}: the budget's spend unchanged`);
  }
});

t.test('alerts and deliveries are checked too, every table before any is inserted', async (t) => {
  const now = Date.now();
  const YEARS_10 = 10 * 365 * 86_400_000;
  // three alerts: the first breaks kind, severity, threshold and data; the second fired 10 years ahead; the third has
  // a version from 10 years ahead. One delivery: of the nil id, 400 days ahead. And requests with a negative cost.
  const alerts = `SELECT generateUUIDv4(number) AS id, if(number = 0, 'free_money', 'daily_budget') AS kind,
      if(number = 0, 'loud', 'warning') AS severity, 'daily' AS subject, toNullable(if(number = 0, inf, 80)) AS threshold,
      'w' AS window, 't' AS title, 'm' AS message, if(number = 0, 'not json', '{}') AS data,
      fromUnixTimestamp64Milli(toInt64(${now}) + if(number = 1, ${YEARS_10}, 0), 'UTC') AS fired_at, false AS read,
      (toUInt64(${now}) + if(number = 2, ${YEARS_10}, 0)) * 1000 AS version, '' AS claimed_by FROM numbers(3)`;
  const deliveries = `SELECT toUUID('00000000-0000-0000-0000-000000000000') AS alert_id, 'webhook' AS channel, true AS delivered,
      toUInt16(1) AS attempts, '' AS error, fromUnixTimestamp64Milli(toInt64(${now + 400 * 86_400_000}), 'UTC') AS ts`;
  const before = await counts();
  const r = await importArchive(await edited({ requests: asNew('toDecimal64(-1, 12) AS cost'), alerts, alert_deliveries: deliveries }));
  t.equal(r.status, 400, JSON.stringify(r.body));
  t.equal(r.message, [
    "archive: table alert_deliveries: 1 row has an empty alert_id (the nil UUID); 1 row has a ts more than a day after the import's time",
    `table alerts: 1 row has a kind the gateway does not write (not one of ${ALERT_ROW_KINDS.join(', ')}); 1 row has a severity the gateway does not write (not one of info, warning, critical); 1 row has a non-finite threshold; 1 row has a fired_at more than a day after the import's time; 1 row has a version more than a day after the import's time (versions are microseconds of the write); 1 row has a data column that is not JSON`,
    'table requests: 2 rows have a negative cost',
  ].join('; '));
  t.same(await counts(), before, 'nothing inserted in any table');

  // the same alerts and delivery within the rules: imported
  const good = await importArchive(await edited({
    alerts: `SELECT * REPLACE ('daily_budget' AS kind, 'warning' AS severity, toNullable(80.0) AS threshold, '{}' AS data,
      fromUnixTimestamp64Milli(toInt64(${now}), 'UTC') AS fired_at, toUInt64(${now}) * 1000 AS version) FROM (${alerts})`,
    alert_deliveries: `SELECT * REPLACE (generateUUIDv4() AS alert_id, fromUnixTimestamp64Milli(toInt64(${now}), 'UTC') AS ts) FROM (${deliveries})`,
  }));
  t.equal(good.status, 200, JSON.stringify(good.body));
  t.same(good.body.imported, { alert_deliveries: 1, alerts: 3, requests: 0 });
});

t.test('a good archive still imports: new rows within the rules (a price_source of \'\', as rows before it had) add to the spend', async (t) => {
  const spent = await dailySpent();
  const before = await counts();
  const r = await importArchive(await edited({ requests: asNew("'' AS price_source") }));
  t.equal(r.status, 200, JSON.stringify(r.body));
  t.same(r.body.imported, { alert_deliveries: 0, alerts: 0, requests: 2 });
  const after = await counts();
  t.equal(after.requests, before.requests + 2);
  t.equal(after.usage_hourly, before.usage_hourly + 2, 'the rollup took them once');
  const now = await dailySpent();
  t.ok(Math.abs(now - 2 * spent) < 1e-9, `the spend doubled: ${spent} -> ${now}`);
  const again = await importArchive(Buffer.from(gzipSync(ARCHIVE)));
  t.equal(again.status, 200, 'the export itself: 200');
  t.same(again.body.imported, { alert_deliveries: 0, alerts: 0, requests: 0 }, 'nothing new in it');
});

t.test('the archive carries `dispatched`; an archive from before the column imports, its rows dispatched', async (t) => {
  const rollup = async () => (await store.query<{ n: string; d: string }>(`SELECT sum(rows) AS n, sum(dispatched_rows) AS d FROM ${store.t('usage_hourly')}`))[0]!;
  const before = await rollup();
  const refused = await importArchive(await edited({ requests: asNew('false AS dispatched') }));
  t.equal(refused.status, 200, JSON.stringify(refused.body));
  t.same(refused.body.imported, { alert_deliveries: 0, alerts: 0, requests: 2 });
  const mid = await rollup();
  t.same([Number(mid.n) - Number(before.n), Number(mid.d) - Number(before.d)], [2, 0], 'two rows not dispatched: in the rollup\'s rows, not its dispatched ones');
  t.equal((await gw.rows('NOT dispatched')).length, 2, 'the imported rows kept their false');
  const old = await importArchive(await edited({ requests: asNew().replace('SELECT *', 'SELECT * EXCEPT (dispatched)') }, { without: { table: 'requests', column: 'dispatched' } }));
  t.equal(old.status, 200, JSON.stringify(old.body));
  t.same(old.body.imported, { alert_deliveries: 0, alerts: 0, requests: 2 });
  const after = await rollup();
  t.same([Number(after.n) - Number(mid.n), Number(after.d) - Number(mid.d)], [2, 2], 'rows without the column: dispatched, as before');
  t.equal((await gw.rows('NOT dispatched')).length, 2);
});

t.test('the alert kinds and severities the checks accept are the ones the alerts folder writes', async (t) => {
  const kinds: readonly AlertKind[] = [...ALERT_KINDS, 'auto_switch', 'test'];
  t.same([...ALERT_ROW_KINDS].sort(), [...kinds].sort());
  const severities: readonly Severity[] = ALERT_SEVERITIES;
  t.same(severities, ['info', 'warning', 'critical']);
});
