// A spool segment's rows, by one definition (src/store/segment.ts rowLines): what the writer inserts as it is, what
// it parses when ClickHouse refuses the data, and what the spool counts are the same lines.

import t from 'tap';
import { countRows, headerLine, lineId, lines, markerLine, rowLine, rowLines, rowOf, rowsOf } from '../../src/store/segment.js';

const COLUMNS = ['request_id', 'status'];
const header = headerLine(COLUMNS);
const row = (id: string) => rowLine(COLUMNS, { request_id: id, status: 'success' });
const obj = (id: string) => ({ request_id: id, status: 'success' });

t.test('rows as they are: the header, markers, lines the disk cut and torn pieces left out; a whole last row kept', async (t) => {
  t.equal(row('a'), '["a","success"]', 'a row is its values in the columns\' order');
  t.equal(rowLine(COLUMNS, { status: 'x', extra: 1 }), '[null,"x"]', 'a column the row lacks is null; what the columns do not name is left out');
  const text = [header, markerLine(COLUMNS, { request_id: 'm' }), `${row('a')}\n`, `["cut!\n`, `${row('b')}\n`, markerLine(COLUMNS, { request_id: 'n' })].join('');
  t.same(rowLines(text), { columns: COLUMNS, lines: [row('a'), row('b')] }, 'the header names the columns; it, markers and a line ended with ! are not rows');
  t.same(rowLines(`${text}["c","sta`).lines, [row('a'), row('b')], 'a last piece cut in the middle of a row is not one');
  t.same(rowLines(`${text}${row('c')}`).lines, [row('a'), row('b'), row('c')], 'a whole row whose newline a kill cut is one');
  t.same(rowLines(`${text}["c"]`).lines, [row('a'), row('b')], 'a last piece of another length than the columns is not');
  t.same(rowLines(`${text}${markerLine(COLUMNS, { request_id: 'o' }).trimEnd()}`).lines, [row('a'), row('b')], 'a whole marker without its newline is not');
  t.same(rowLines(`${row('z')}\n${text}`).lines, [row('z'), row('a'), row('b')], 'an array no header describes is kept: a row it cannot read, which the writer sets aside');
  t.same(rowLines(`${row('z')}\n`, COLUMNS).lines, [row('z')], 'unless the reader knows its columns (text that never left its process)');
  t.equal(countRows(Buffer.from(`${text}${row('c')}`)), 3, 'counted the same way');
  t.equal(countRows(Buffer.from(`${row('y')}\n${row('z')}\n`), COLUMNS), 2, 'and with the columns known');
  t.same(rowsOf(`${text}${row('c')}`), [obj('a'), obj('b'), obj('c')], 'and parsed the same way, as objects');
  t.same(rowsOf(`${header}${row('a')}\n["a", damaged]\n`), [obj('a'), '["a", damaged]'], 'a line damaged on disk stays its text when parsed, to be set aside');
});

t.test('a segment an earlier version wrote (no header, a JSON object a row) is read as it is', async (t) => {
  const old = (id: string) => JSON.stringify(obj(id));
  const text = ['{"$begin":{"request_id":"m"}}\n', `${old('a')}\n`, `{"request_id":"cut!\n`, `${old('b')}\n`, old('c')].join('');
  t.same(rowLines(text), { columns: null, lines: [old('a'), old('b'), old('c')] }, 'no columns: the lines are objects');
  t.same(rowsOf(text), [obj('a'), obj('b'), obj('c')]);
  t.same(rowsOf(`${old('a')}\n{"request_id": damaged}\n`), [obj('a'), '{"request_id": damaged}'], 'a damaged line stays its text');
  t.same(rowLines(`${old('a')}\n{"$x":{"request_id":"y"}}\n${old('b')}\n{"$x":{"request_id":"z"}}`).lines, [old('a'), old('b')], 'a `{"$` line is never a row, last or not');
  t.same([...lines(text)].map((l) => [l.marker, l.row]), [[true, { request_id: 'm' }], [false, obj('a')], [false, obj('b')], [false, obj('c')]], 'the lines read at open');
});

t.test('the lines read at open: markers as objects, rows in the columns of the header before them', async (t) => {
  const other = ['status', 'request_id'];
  const text = [header, markerLine(COLUMNS, { request_id: 'm' }), `${row('a')}\n`, headerLine(other), markerLine(other, { request_id: 'p', status: 'x' }), `${rowLine(other, obj('b'))}\n`, '["x"]\n', '!\n'].join('');
  t.same([...lines(text)].map((l) => [l.marker, l.row]), [[true, { request_id: 'm', status: null }], [false, obj('a')], [true, { status: 'x', request_id: 'p' }], [false, obj('b')], [false, {}]], 'each row and marker read in its own header\'s columns; a line that fits none an empty row (counted); a cut line none');
  t.same([...lines(`${row('z')}\n`)].map((l) => l.row), [{}], 'an array before any header is a row it cannot read: counted, empty');
});

t.test('a row line\'s id: its first value (the rows put it first), an object\'s first key, or parsed', async (t) => {
  t.equal(lineId(row('a'), 'request_id', COLUMNS), 'a');
  t.equal(lineId(rowLine(['status', 'request_id'], obj('b')), 'request_id', ['status', 'request_id']), 'b', 'another place: parsed');
  t.equal(lineId(rowLine(COLUMNS, obj('q"uote')), 'request_id', COLUMNS), 'q"uote', 'an escaped quote: parsed');
  t.equal(lineId(JSON.stringify(obj('c')), 'request_id', null), 'c', 'an earlier version\'s object line');
  t.equal(lineId('["a", damaged', 'request_id', COLUMNS), 'a', 'the first value read even when the rest is damaged');
  t.equal(lineId('[damaged', 'request_id', COLUMNS), null, 'a line that does not parse: none');
});

t.test('a begin marker holds its row\'s values in the columns, zeros and nulls included; an earlier version\'s sparse one reads as it is', async (t) => {
  const columns = ['request_id', 'kind', 'parent_id', 'attempt', 'auto_switched', 'cached_tokens', 'cost', 'missing'];
  const line = markerLine(columns, { request_id: 'r', kind: 'request', parent_id: null, attempt: 0, auto_switched: false, cached_tokens: 0, cost: '0.000000000000', extra: 1 });
  t.equal(line, '{"$begin":["r","request",null,0,false,0,"0.000000000000",null]}\n', 'a zero stays a zero, a null a null; what the columns do not name is left out');
  t.same(rowLines(line).lines, [], 'still a marker, not a row');
  t.same([...lines(`${headerLine(columns)}${line}`)].map((l) => l.row), [{ request_id: 'r', kind: 'request', parent_id: null, attempt: 0, auto_switched: false, cached_tokens: 0, cost: '0.000000000000', missing: null }], 'read back whole');
  t.same([...lines('{"$begin":{"request_id":"r","kind":"request"}}\n')].map((l) => l.row), [{ request_id: 'r', kind: 'request' }], 'an earlier version\'s marker: the object as it is');
  t.same([...lines(line)], [], 'a marker of values no header describes is skipped');
});

t.test('a row line is the same whatever the columns are named: the maker of each set of columns reads names as data', async (t) => {
  // rowLine makes a function per set of columns (src/store/segment.ts); a name is never code, whatever its characters.
  const odd = ['a"b', 'c\\d', '\u2028e', "f'g", '`${h}`', '}]);throw 1;//', 'request_id'];
  const row: Record<string, unknown> = {};
  odd.forEach((c, i) => (row[c] = i % 2 === 0 ? `v${i}\n"` : i));
  t.equal(rowLine(odd, row), JSON.stringify(odd.map((c) => row[c])), 'each value read under its own name');
  t.equal(rowLine(odd, { 'a"b': 1 }), JSON.stringify([1, null, null, null, null, null, null]), 'the rest null');
  t.equal(rowLine(['x'], { x: 0, y: 1 }), '[0]', 'another set of columns has its own maker');
  t.equal(rowLine(['x'], { x: false }), '[false]', 'a false or zero value is kept (only a missing one or undefined is null)');
  t.equal(rowLine(['x', 'y'], { x: undefined, y: null }), '[null,null]');
});

t.test('a row line read in its columns: one object literal a set of columns, whatever the names', async (t) => {
  const odd = ['request_id', 'we"ird\\name', '__proto__', 'x\u2028y', '0', 'constructor', "');process.exit(1);//"];
  const row = rowOf<Record<string, unknown>>(JSON.stringify(['r', 1, { polluted: true }, 3, 4, 5, 6]), odd)!;
  t.same(Object.keys(row).sort(), [...odd].sort(), 'every name an own key, as it is');
  t.equal(Object.getPrototypeOf(row), Object.prototype, 'a column named __proto__ is a column, not the prototype');
  t.same(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, { polluted: true });
  t.equal(row["');process.exit(1);//"], 6, 'a name is only ever a string');
  t.same(rowOf(JSON.stringify(['a', 'b']), ['k', 'k']), { k: 'b' }, 'a name twice: the last value, as before');
  const cols = ['request_id', 'kind'];
  t.same([rowOf('["a","request"]', cols), rowOf('["b","combo"]', [...cols])], [{ request_id: 'a', kind: 'request' }, { request_id: 'b', kind: 'combo' }], 'the same names in another array: the same rows');
});

t.test('two sets of names that join alike each make their own rows', async (t) => {
  t.same(rowOf('["x","y"]', ['a', 'b']), { a: 'x', b: 'y' });
  t.same(rowOf('["x"]', ['a\u0000b']), { 'a\u0000b': 'x' }, 'one name holding a NUL: not the two names before');
  t.same(rowOf('[""]', ['']), { '': '' });
  t.same(rowOf('[]', []), {}, 'no columns: an empty row, not the one-column set before');
});
