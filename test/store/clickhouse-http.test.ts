// The test ClickHouse server (test/helpers/clickhouse-http.ts) against the real @clickhouse/client, the way the
// server path uses it: pings, selects in the formats the store reads, bound parameters of every type Tollgate binds,
// settings that do not outlive their statement, inserts with deduplication tokens, Native out and in, gzip both ways,
// authentication, errors the client parses into `code` and `type`, and the fault controls (refuse on the same port,
// 503, hang). Hosted in this process: nothing else here opens an embedded store.

import t from 'tap';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { ClickHouseHttp } from '../helpers/clickhouse-http.js';
import { tempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/client.js';

const server = await ClickHouseHttp.start({ dataDir: tempDir(t, 'tollgate-chhttp-'), password: 'secret' });
t.teardown(() => server.close());

function client(over: Parameters<typeof createClient>[0] = {}): ClickHouseClient {
  const c = createClient({ url: server.url, username: 'default', password: 'secret', request_timeout: 2000, log: { level: ClickHouseLogLevel.OFF }, ...over });
  t.teardown(() => c.close());
  return c;
}
const ch = client();

t.test('ping, a select in JSONEachRow, JSON and TabSeparated, the headers the client reads', async (t) => {
  t.same(await ch.ping(), { success: true });
  const res = await fetch(`${server.url}/ping`);
  t.equal(await res.text(), 'Ok.\n');
  const rs = await ch.query({ query: 'SELECT 1 AS one, \'a\' AS s', format: 'JSONEachRow' });
  t.same(await rs.json(), [{ one: 1, s: 'a' }]);
  t.equal(rs.response_headers['x-clickhouse-format'], 'JSONEachRow');
  t.equal(rs.response_headers['x-clickhouse-query-id'], rs.query_id, 'the query id the client sent comes back');
  const json = await (await ch.query({ query: 'SELECT number AS n FROM system.numbers LIMIT 3', format: 'JSON' })).json<{ n: string }>();
  t.same(json.data.map((r) => Number(r.n)), [0, 1, 2]);
  t.equal(await (await ch.query({ query: 'SELECT 1, \'x\'', format: 'TabSeparated' })).text(), '1\tx\n');
});

t.test('bound parameters: strings with quotes, tabs and backslashes, NULL, integers, arrays of strings, UUIDs and dates', async (t) => {
  const params = {
    s: "it's a \\ and a\ttab\nnewline", n: null, i: -42, big: 9_007_199_254_740_993n,
    arr: ["o'brien", 'back\\slash', ''], ids: ['01890a5d-ac96-774b-bcce-b302099a8057'], days: ['2024-05-15', '2024-05-16'],
  };
  const rows = await (await ch.query({
    query: `SELECT {s:String} AS s, {n:Nullable(Int64)} AS n, {i:Int64} AS i, toString({big:UInt64}) AS big, {arr:Array(String)} AS arr,
            arrayMap(x -> toString(x), {ids:Array(UUID)}) AS ids, arrayMap(x -> toString(x), {days:Array(Date)}) AS days`,
    query_params: params,
    format: 'JSONEachRow',
  })).json();
  t.same(rows, [{ s: params.s, n: null, i: '-42', big: '9007199254740993', arr: params.arr, ids: params.ids, days: params.days }]);
});

t.test('settings apply to their statement only (a server keeps nothing between requests)', async (t) => {
  const value = async () => (await (await ch.query({ query: "SELECT value FROM system.settings WHERE name = 'max_threads'", format: 'JSONEachRow' })).json<{ value: string }>())[0]!.value;
  const before = await value();
  const set = await (await ch.query({ query: "SELECT value FROM system.settings WHERE name = 'max_threads'", format: 'JSONEachRow', clickhouse_settings: { max_threads: 3 } })).json<{ value: string }>();
  t.equal(set[0]!.value, '3', 'set for the request');
  t.equal(await value(), before, 'and back to what it was for the next one');
});

t.test('inserts: JSONEachRow rows in the body, a deduplication token, errors with code and type', async (t) => {
  await ch.command({ query: 'CREATE DATABASE IF NOT EXISTS d' });
  await ch.command({ query: 'CREATE TABLE IF NOT EXISTS d.t (a UInt32, s String) ENGINE = MergeTree ORDER BY a SETTINGS non_replicated_deduplication_window = 100' });
  const settings = { insert_deduplicate: 1, insert_deduplication_token: 'tok-1' } as const;
  await ch.insert({ table: 'd.t', values: [{ a: 1, s: 'x' }, { a: 2, s: 'y' }], format: 'JSONEachRow', clickhouse_settings: settings });
  await ch.insert({ table: 'd.t', values: [{ a: 1, s: 'x' }, { a: 2, s: 'y' }], format: 'JSONEachRow', clickhouse_settings: settings });
  await ch.insert({ table: 'd.t', values: [{ a: 3, s: 'z' }], format: 'JSONEachRow' });
  t.same(await (await ch.query({ query: 'SELECT a FROM d.t ORDER BY a', format: 'JSONEachRow' })).json(), [{ a: 1 }, { a: 2 }, { a: 3 }], 'the retry with the same token was dropped');
  const bad = await ch.insert({ table: 'd.t', values: [{ a: 'not a number', s: 'x' }], format: 'JSONEachRow' }).catch((e: unknown) => e);
  t.match(bad, { code: '27', type: /^CANNOT_PARSE/ }, 'a row refused as data: code and type parsed by the client');
  const missing = await ch.query({ query: 'SELECT * FROM d.missing', format: 'JSONEachRow' }).catch((e: unknown) => e);
  t.match(missing, { code: '60', type: 'UNKNOWN_TABLE' });
  const res = await fetch(`${server.url}/?query=${encodeURIComponent('SELECT * FROM d.missing')}`, { headers: { 'x-clickhouse-user': 'default', 'x-clickhouse-key': 'secret' } });
  t.equal(res.status, 500);
  t.equal(res.headers.get('x-clickhouse-exception-code'), '60');
  t.match(await res.text(), /^Code: 60\. DB::Exception: .*\(UNKNOWN_TABLE\) \(version [^)]+\)\n$/);
  t.equal((await fetch(`${server.url}/?query=SELECT%201`)).status, 401, 'no password: refused');
  t.match(await client({ password: 'wrong' }).query({ query: 'SELECT 1' }).catch((e: unknown) => e), { code: '516', type: 'AUTHENTICATION_FAILED' });
});

t.test('Native out (exec) and in (exec with a body), gzip both ways', async (t) => {
  const dir = tempDir(t);
  const out = await ch.exec({ query: 'SELECT a, s FROM d.t ORDER BY a FORMAT Native' });
  const chunks: Buffer[] = [];
  for await (const c of out.stream) chunks.push(c as Buffer);
  writeFileSync(join(dir, 'native'), Buffer.concat(chunks));
  await ch.command({ query: 'CREATE TABLE d.copy (a UInt32, s String) ENGINE = MergeTree ORDER BY a' });
  const rs = await ch.exec({ query: 'INSERT INTO d.copy (a, s) FORMAT Native', values: createReadStream(join(dir, 'native')) });
  for await (const _ of rs.stream);
  t.same(await (await ch.query({ query: 'SELECT a, s FROM d.copy ORDER BY a', format: 'JSONEachRow' })).json(), [{ a: 1, s: 'x' }, { a: 2, s: 'y' }, { a: 3, s: 'z' }]);
  const gz = client({ compression: { request: true, response: true } });
  await gz.insert({ table: 'd.copy', values: [{ a: 4, s: 'gz' }], format: 'JSONEachRow' });
  t.same(await (await gz.query({ query: 'SELECT s FROM d.copy WHERE a = 4', format: 'JSONEachRow' })).json(), [{ s: 'gz' }], 'gzip request and response');
  t.ok(readFileSync(join(dir, 'native')).length > 0);
});

t.test('the fault controls: refused on the same port, 503, a hang, and healthy again', async (t) => {
  const fast = client({ request_timeout: 500 });
  const port = server.port;
  await server.refuse();
  t.match(await fast.query({ query: 'SELECT 1' }).catch((e: unknown) => e), { code: 'ECONNREFUSED' });
  await server.restore();
  t.equal(server.port, port, 'the same port');
  t.same(await fast.ping(), { success: true });
  await server.serve503();
  const unavailable = await fast.query({ query: 'SELECT 1' }).catch((e: unknown) => e as Error);
  t.match((unavailable as Error).message, /Service Unavailable/);
  await server.hang();
  t.match(await fast.query({ query: 'SELECT 1' }).catch((e: unknown) => e as Error), { message: /Timeout/ });
  // An insert whose answer is lost after it landed, then the retry with the same token: stored once.
  await server.hang({ execute: true });
  const settings = { insert_deduplicate: 1, insert_deduplication_token: 'lost-ack' } as const;
  t.match(await fast.insert({ table: 'd.t', values: [{ a: 10, s: 'lost' }], format: 'JSONEachRow', clickhouse_settings: settings }).catch((e: unknown) => e as Error), { message: /Timeout/ });
  await server.healthy();
  await fast.insert({ table: 'd.t', values: [{ a: 10, s: 'lost' }], format: 'JSONEachRow', clickhouse_settings: settings });
  t.same(await (await fast.query({ query: 'SELECT count() AS n FROM d.t WHERE a = 10', format: 'JSONEachRow' })).json(), [{ n: '1' }]);
  const stats = await server.stats();
  t.equal(stats.mode, 'healthy');
  t.ok(stats.refusedFor503 >= 1 && stats.inserts >= 1, JSON.stringify(stats));
});

t.test('the store (src/store/client.ts) over it: ping, query, insert, command', async (t) => {
  const store = openStore({ clickhouse_url: server.url, database: 'viahttp', data_dir: tempDir(t), username: 'default', password: 'secret' });
  t.teardown(() => store.close());
  t.equal(store.embedded, false);
  t.ok(await store.ping());
  await store.command('CREATE DATABASE IF NOT EXISTS viahttp');
  await store.command('CREATE TABLE viahttp.t (id String, n UInt64) ENGINE = MergeTree ORDER BY id');
  await store.insert('t', [{ id: 'a', n: 1 }, { id: 'b', n: 2 }], 'tok');
  t.same(await store.query<{ id: string; n: string }>('SELECT id, n FROM viahttp.t WHERE id IN {ids:Array(String)} ORDER BY id', { ids: ['a', 'b'] }), [{ id: 'a', n: '1' }, { id: 'b', n: '2' }]);
});
