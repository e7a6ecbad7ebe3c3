// Spool segments damaged on disk, and a spool directory that will not delete (src/store/segment.ts, spool.ts,
// row-errors.ts): a leftover segment whose header names a column the table lacks is data, set aside, and
// nothing waits behind it; rows a damaged header or damaged bytes make unreadable are counted and kept in
// rejected.jsonl, never dropped unseen; a segment whose file cannot be deleted stays counted in the spool's bytes until
// it is. All on the real embedded ClickHouse, real files in temp directories.

import t from 'tap';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrations.js';
import { REQUEST_COLUMNS, type RequestRow } from '../../src/store/rows.js';
import { headerLine, lines, parseRows, rowLine, rowLines } from '../../src/store/segment.js';
import { Spool } from '../../src/store/spool.js';
import { BatchWriter, type WriterEvents } from '../../src/store/writer.js';
import { isRowError, ROW_ERROR_CODES } from '../../src/store/row-errors.js';
import { uuidv7 } from '../../src/ledger/uuidv7.js';
import { openTestStore } from '../helpers/store-paths.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';
import { leftoversRead } from '../helpers/spool.js';

const store: Store = await openTestStore(t, { database: 'tollgate', prefix: 'tollgate-damage-' });
await migrate(store);

let seq = 0;
const row = (tag: string): RequestRow => rec({ at: new Date(Date.UTC(2024, 5, 1, 12) + seq++).toISOString(), model: 'paid/m', key: tag, usage: [3, 2] });

const stored = async (where: string): Promise<string[]> =>
  (await store.query<{ id: string }>(`SELECT toString(request_id) AS id FROM ${store.t('requests')} FINAL WHERE ${where} ORDER BY id`)).map((r) => r.id);

interface Log { written: number; dropped: [number, string][]; errors: number; states: boolean[] }
function events(): { log: Log; events: WriterEvents } {
  const log: Log = { written: 0, dropped: [], errors: 0, states: [] };
  return {
    log,
    events: {
      written: (n) => void (log.written += n),
      dropped: (n, reason) => void log.dropped.push([n, reason]),
      error: () => void log.errors++,
      state: (up) => void log.states.push(up),
    },
  };
}

const spoolIn = (dir: string) => new Spool<RequestRow>({ dir, commitMs: 20, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS }, (r) => String(r.request_id));
// Each name once in the whole file: a name is its insert's deduplication token.
let names = 0;
const segment = (dir: string, text: string | Buffer) => writeFileSync(join(dir, `${1_700_000_000_000 + ++names}-0badcafe-${String(names).padStart(6, '0')}.jsonl`), text);
const segmentText = (rows: RequestRow[]) => headerLine(REQUEST_COLUMNS) + rows.map((r) => `${rowLine(REQUEST_COLUMNS, r)}\n`).join('');
const rejected = (dir: string) => readFileSync(join(dir, 'rejected.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { reason: string; row: unknown });
const total = (log: Log, reason: string) => log.dropped.filter(([, r]) => r === reason).reduce((a, [n]) => a + n, 0);

/** `p`, or a failure after `ms`: a writer that retries for ever never settles its flush. */
const within = <T>(p: Promise<T>, ms = 15_000): Promise<T | 'timed out'> =>
  Promise.race([p, new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), ms).unref())]);

t.test('an insert naming a column the table lacks is refused as data on the embedded engine; a store that fails is not', async (t) => {
  const caught = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err);
  const unknown = await caught(store.insertLines('requests', [`["${uuidv7(Date.now())}","request"]`], 'damage-1', ['requesu_id', 'kind']));
  t.match(unknown, { type: 'NO_SUCH_COLUMN_IN_TABLE' }, 'the engine names it NO_SUCH_COLUMN_IN_TABLE');
  t.ok(isRowError(unknown), 'a row error: the same segment can never succeed');
  t.ok(isRowError(unknown, true), 'and one of the columns named (the header), not of a row');
  const twice = await caught(store.insertLines('requests', ['["x","y"]'], 'damage-2', ['kind', 'kind']));
  t.match(twice, { type: 'DUPLICATE_COLUMN' });
  t.ok(isRowError(twice, true), 'a column named twice: the header too');
  const value = await caught(store.insertLines('requests', ['["not a uuid","request"]'], 'damage-3', ['request_id', 'kind']));
  t.ok(isRowError(value) && !isRowError(value, true), 'a value it cannot parse: a row error, the header fine');
  const table = await caught(store.insertLines('no_such_table', ['["x"]'], 'damage-4', ['kind']));
  t.match(table, { type: 'UNKNOWN_TABLE' });
  t.notOk(isRowError(table), 'a table missing is the store failing: retried, never set aside');
  const down = openStore({ clickhouse_url: 'http://127.0.0.1:9', database: 'tollgate', data_dir: tempDir(t), username: 'default', password: '', connect_timeout_ms: 500 } as Parameters<typeof openStore>[0]);
  t.teardown(() => down.close());
  const refused = await caught(down.insertLines('requests', ['["x"]'], 'damage-5', ['kind']));
  t.ok(refused !== null && !isRowError(refused), 'a server that refuses connections: not a row error');
});

t.test('a leftover segment whose header names a column the table lacks does not hold the writer up', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const damaged = [row('colname'), row('colname'), row('colname')];
  segment(dir, segmentText(damaged).replace('"request_id"', '"requesu_id"'));
  const after = [row('colname-after'), row('colname-after')];
  segment(dir, segmentText(after));
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spoolIn(dir), { maxRows: 100, flushMs: 60_000, retryBaseMs: 5, retryMaxMs: 20 }, ev);
  t.teardown(() => w.close());
  t.equal(await within(w.flush()), undefined, 'the flush ends: the segment is not retried for ever');
  t.same(await stored(`api_key_name = 'colname-after'`), after.map((r) => r.request_id).sort(), 'the segment behind it is stored');
  t.equal(log.errors, 0, 'no insert counted as the store failing');
  t.same(log.states, [], 'the store never reported down');
  t.equal(w.depth, 0, 'nothing waits in the spool');
});

t.test('rows of a header the store refused are not mapped by its names: each stays its line, to be set aside', async (t) => {
  const columns = ['requesu_id', 'kind'];
  const texts = ['["a","request"]', '["b","request"]'];
  t.same(parseRows({ columns, lines: texts }), [{ requesu_id: 'a', kind: 'request' }, { requesu_id: 'b', kind: 'request' }], 'a header the store took: by its names');
  t.same(parseRows({ columns, lines: texts }, true), texts, 'refused: every row its line as it is (ClickHouse refuses a JSON string as a row)');
});

t.test('a segment whose header the disk zeroed: its rows are counted at open, set aside in rejected.jsonl, and the rest stored', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const lost = Array.from({ length: 4 }, () => row('zerohead'));
  const text = Buffer.from(segmentText(lost));
  text.fill(0, 0, 64); // a torn first page: the header line is gone
  segment(dir, text);
  const after = [row('zerohead-after')];
  segment(dir, segmentText(after));
  const spool = spoolIn(dir);
  t.same((await leftoversRead(spool)), { segments: 2, rows: 5, interrupted: 0 }, 'found at open: the file kept, each unreadable row counted');
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000, retryBaseMs: 5, retryMaxMs: 20 }, ev);
  t.teardown(() => w.close());
  t.equal(await within(w.flush()), undefined);
  t.equal(total(log, 'rejected'), 4, 'every row that cannot be read counted as dropped, rejected (the damaged header is not a row)');
  t.same(rejected(dir).map((r) => r.row), lost.map((r) => rowLine(REQUEST_COLUMNS, r)), 'each kept for a person, as the line it was');
  t.same(await stored(`api_key_name LIKE 'zerohead%'`), after.map((r) => r.request_id), 'the intact segment stored; nothing stored from the unreadable lines');
  t.equal(log.written, 1);
  await w.close();
  t.same(readdirSync(dir).filter((f) => f.endsWith('.jsonl') && f !== 'rejected.jsonl'), [], 'both segments done');
});

t.test('a row line damaged in the middle of a segment is set aside and counted, its neighbours stored', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const rows = Array.from({ length: 5 }, () => row('midzero'));
  const text = segmentText(rows);
  const at = text.indexOf(rowLine(REQUEST_COLUMNS, rows[2]!)) + 10;
  segment(dir, text.slice(0, at) + '\0'.repeat(20) + text.slice(at + 20));
  const spool = spoolIn(dir);
  t.same((await leftoversRead(spool)), { segments: 1, rows: 5, interrupted: 0 }, 'counted at open');
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 100, flushMs: 60_000, retryBaseMs: 5, retryMaxMs: 20 }, ev);
  t.teardown(() => w.close());
  t.equal(await within(w.flush()), undefined);
  t.same(log.dropped, [[1, 'rejected']], 'the damaged row counted');
  t.equal(rejected(dir).length, 1);
  t.match(rejected(dir)[0]!.row, /\u0000/, 'kept as the line it was, damage and all');
  t.same(await stored(`api_key_name = 'midzero'`), rows.filter((_, i) => i !== 2).map((r) => r.request_id).sort(), 'the other four stored');
});

t.test('segment text: a whole line that cannot be read is a row (kept, counted); a torn piece, a cut line and a damaged header are not', async (t) => {
  const cols = ['request_id', 'status'];
  const header = headerLine(cols);
  const damagedHeader = '\0'.repeat(8) + header.slice(8);
  t.same(rowLines(`${damagedHeader}["a","x"]\n["b","x"]\n["c`).lines, [damagedHeader.trimEnd(), '["a","x"]', '["b","x"]'], 'arrays no header describes kept; the torn last piece not');
  t.same(rowLines(`${damagedHeader}["a","x"]\n["b","x"]`).lines, [damagedHeader.trimEnd(), '["a","x"]', '["b","x"]'], 'a whole last array without its newline kept');
  t.same(parseRows(rowLines(`${damagedHeader}["a","x"]\n["cut!\n`)), ['["a","x"]'], 'parsed: the row its line; the damaged header and the cut line no rows');
  t.same([...lines(`${damagedHeader}["a","x"]\n["cut!\n["b","x"]\n["c`)].map((l) => [l.marker, l.row]), [[false, {}], [false, {}]], 'at open: each whole unreadable row counted, empty');
  t.same(parseRows(rowLines(`${header}["a","x"]\n["b"]\n`)), [{ request_id: 'a', status: 'x' }, '["b"]'], 'another length than the header: its line');
});

t.test('a segment whose file the disk will not delete stays in the spool\'s bytes until it is deleted; the writer goes on', async (t) => {
  const dir = tempDir(t, 'tollgate-spool-');
  const spool = spoolIn(dir);
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: 1000, flushMs: 60_000, retryBaseMs: 5, retryMaxMs: 20 }, ev);
  t.teardown(() => w.close());
  const first = [row('undeletable'), row('undeletable')];
  for (const r of first) w.enqueue(r);
  const [seg] = spool.seal();
  const bytes = spool.bytes;
  t.ok(seg !== undefined && bytes > 0);
  // The file becomes a directory with an entry: rmSync (no `recursive`) refuses it, as an immutable directory does.
  rmSync(seg!.path);
  mkdirSync(seg!.path);
  writeFileSync(join(seg!.path, 'x'), 'x');
  t.equal(await within(w.flush()), undefined);
  t.same(await stored(`api_key_name = 'undeletable'`), first.map((r) => r.request_id).sort(), 'its rows stored');
  t.equal(log.errors, 0, 'a delete the disk refuses is not the store failing');
  t.same(log.states, []);
  t.equal(spool.rows, 0, 'no row waits');
  t.equal(spool.bytes, bytes, 'the bytes still on disk still counted');
  rmSync(seg!.path, { recursive: true }); // the directory deletes again
  w.enqueue(row('undeletable'));
  await within(w.flush());
  t.equal(spool.bytes, 0, 'deleted at the next remove, and counted down');
  t.equal(log.written, 3);
});

t.test("a row the engine cannot parse is set aside even when the client misreads the error's name; the rows after it are stored", async (t) => {
  // A token count past what ClickHouse parses (1e+300 in a UInt64 column: an upstream's absurd usage, before the
  // gateway stopped believing it). The engine's message lists the row's columns with their types, and the client took
  // the first one's type for the error's name: `UUID`. The writer took that for the store failing and retried the
  // segment for ever: 0 of 4 rows landed, /ready said the store refused inserts.
  const dir = tempDir(t, 'tollgate-spool-');
  const bad = { ...row('unparsable'), input_tokens: 1e300 } as unknown as RequestRow;
  const after = [row('unparsable-after'), row('unparsable-after'), row('unparsable-after')];
  segment(dir, segmentText([bad, ...after]));
  const caught = await store.insertLines('requests', [rowLine(REQUEST_COLUMNS, bad)], 'damage-1e300', [...REQUEST_COLUMNS]).then(() => null, (err: unknown) => err);
  t.notMatch(caught, { type: /^CANNOT_PARSE/ }, 'the client does not read the name (it would not need the number)');
  t.match(caught, { code: '27' }, 'but the number is there');
  const { log, events: ev } = events();
  const w = new BatchWriter<RequestRow>(store, 'requests', spoolIn(dir), { maxRows: 100, flushMs: 60_000, retryBaseMs: 5, retryMaxMs: 20 }, ev);
  t.teardown(() => w.close());
  t.equal(await within(w.flush()), undefined, 'the flush ends: the segment is not retried for ever');
  t.same(await stored(`api_key_name = 'unparsable-after'`), after.map((r) => r.request_id).sort(), 'the rows after it are stored');
  t.equal(total(log, 'rejected'), 1, 'the bad row set aside and counted');
  t.same(rejected(dir).map((r) => (r.row as { request_id: string }).request_id), [bad.request_id], 'kept in rejected.jsonl');
  t.same(log.states, [], 'the store never reported down');
});

t.test('every number taken for a row error is, by the engine\'s own table, one of the row errors by name', async (t) => {
  const names = await store.query<{ c: number; n: string }>(`SELECT arrayJoin([${[...ROW_ERROR_CODES].join(',')}]) AS c, errorCodeToName(c) AS n`);
  t.equal(names.length, ROW_ERROR_CODES.size);
  for (const { c, n } of names) t.ok(isRowError({ type: n }), `${c} is ${n}`);
  t.notOk(isRowError({ type: 'UUID', code: '252' }), 'TOO_MANY_PARTS (252) stays the store failing');
  t.notOk(isRowError({ code: 'ECONNREFUSED' }), 'a connection error is no number');
});
