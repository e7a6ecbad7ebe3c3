// A spool segment's rows, by one definition (src/store/segment.ts rowLines): what the writer inserts as it is, what
// it parses when ClickHouse refuses the data, and what the spool counts are the same lines.

import t from 'tap';
import { countRows, markerLine, rowLines, rowsOf } from '../../src/store/segment.js';

const row = (id: string) => JSON.stringify({ request_id: id, status: 'success' });

t.test('rows as they are: markers, lines the disk cut and torn pieces left out; a whole last row kept', async (t) => {
  const text = [markerLine({ request_id: 'm' }), `${row('a')}\n`, `{"request_id":"cut!\n`, `${row('b')}\n`, markerLine({ request_id: 'n' })].join('');
  t.same(rowLines(text), [row('a'), row('b')], 'markers (by their prefix) and a line ended with ! are not rows');
  t.same(rowLines(`${text}{"request_id":"c","sta`), [row('a'), row('b')], 'a last piece cut in the middle of a row is not one');
  t.same(rowLines(`${text}${row('c')}`), [row('a'), row('b'), row('c')], 'a whole row whose newline a kill cut is one');
  t.same(rowLines(`${text}${markerLine({ request_id: 'o' }).trimEnd()}`), [row('a'), row('b')], 'a whole marker without its newline is not');
  t.equal(countRows(Buffer.from(`${text}${row('c')}`)), 3, 'counted the same way');
  t.same(rowsOf(`${text}${row('c')}`), [{ request_id: 'a', status: 'success' }, { request_id: 'b', status: 'success' }, { request_id: 'c', status: 'success' }], 'and parsed the same way');
  t.same(rowsOf(`${row('a')}\n{"request_id": damaged}\n`), [{ request_id: 'a', status: 'success' }], 'a line damaged on disk is skipped when parsed');
});

t.test('a begin marker leaves out the columns that are zero, empty, false or null, and keeps the rest in order', async (t) => {
  const line = markerLine({
    request_id: 'r', kind: 'request', parent_id: null, combo: '', attempt: 0, auto_switched: false, ts: 1700000000000,
    http_status: 200, status: 'interrupted', cost: '0.000000000000', ttft_ms: null, stream: false, duration_ms: 0.25, missing: undefined,
  });
  t.equal(line, '{"$begin":{"request_id":"r","kind":"request","ts":1700000000000,"http_status":200,"status":"interrupted","cost":"0.000000000000","duration_ms":0.25}}\n');
  t.same(rowLines(line), [], 'still a marker, not a row');
});
