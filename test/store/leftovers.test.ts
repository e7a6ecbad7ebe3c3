// The segments an earlier process left in the spool are listed when the spool opens and read after (leftovers.ts): the
// open does not wait for their lines, the reading gives the event loop a turn every few hundred lines, a request left
// in flight is found (a begin marker with no row after it) with only a segment and the requests in flight held at
// once, and a clock stepped back between two segments does not make a request that ended read as left in flight.
// Real files in temp directories; no store (the writer's part is in writer.test.ts).

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REQUEST_COLUMNS, type RequestRow } from '../../src/store/rows.js';
import { headerLine, markerLine, rowLine } from '../../src/store/segment.js';
import { Spool } from '../../src/store/spool.js';
import { tempDir } from '../helpers/tmp.js';
import { rec } from '../helpers/usage-rows.js';
import { leftoversRead } from '../helpers/spool.js';

const idOf = (r: RequestRow) => String(r.request_id);
const open = (dir: string, seen?: RequestRow[]) => new Spool<RequestRow>({ dir, commitMs: 20, maxBytes: 1024 ** 3, columns: REQUEST_COLUMNS }, idOf, seen && ((r) => void seen.push(r)));
let n = 0;
const row = (): RequestRow & { request_id: string } => rec({ at: new Date(Date.UTC(2026, 10, 30, 12) + n++).toISOString(), model: 'paid/m', key: 'left', usage: [3, 2] });
/** A segment file as a process writes it: `name` = creation time, instance, sequence. */
const segment = (dir: string, name: string, lines: string[]) => writeFileSync(join(dir, `${name}.jsonl`), headerLine(REQUEST_COLUMNS) + lines.join(''));
const line = (r: RequestRow) => `${rowLine(REQUEST_COLUMNS, r)}\n`;
const marker = (r: RequestRow) => markerLine(REQUEST_COLUMNS, { ...r, status: 'interrupted' });

t.test('the open lists the leftovers and returns; their lines are read after, with turns of the event loop between', async (t) => {
  const dir = tempDir(t, 'tollgate-left-');
  const rows = Array.from({ length: 12_000 }, row);
  segment(dir, '1764500000000-aaaaaaaa-000001', rows.slice(0, 6000).map(line));
  segment(dir, '1764500000001-aaaaaaaa-000002', rows.slice(6000).map(line));
  const seen: RequestRow[] = [];
  const spool = open(dir, seen);
  t.teardown(() => spool.close());
  t.equal(spool.leftovers.reading, true, 'still reading when the open returns');
  t.equal(seen.length, 0, 'no line read yet');
  t.equal(spool.leftovers.counts().segments, 2, 'both segments listed');
  let turns = 0;
  const tick = setInterval(() => turns++, 0);
  const found = await leftoversRead(spool);
  clearInterval(tick);
  t.same(found, { segments: 2, rows: 12_000, interrupted: 0 }, 'every row counted once read');
  t.equal(seen.length, 12_000, 'each row given to the caller');
  t.same(seen.map(idOf), rows.map((r) => r.request_id), 'oldest segment first, in file order');
  t.ok(turns >= 3, `timers ran while the rows were read (${turns} turns)`);
  t.equal(spool.rows, 12_000, 'the spool counts them');
  t.equal(spool.leftovers.reading, false);
});

t.test('a request left in flight: a marker with no row in its segment or after it; a marker whose row came in a later segment is no such request', async (t) => {
  const dir = tempDir(t, 'tollgate-left-');
  const [a, b, c, d] = [row(), row(), row(), row()];
  // a: begun in segment 1, marked again in 2, ended in 2. b: begun and ended in 1. c: begun in 2, never ended. d: a
  // row alone (ended in the turn it began: no marker).
  segment(dir, '1764500000000-bbbbbbbb-000001', [marker(a), marker(b), line(b)]);
  segment(dir, '1764500000001-bbbbbbbb-000002', [marker(a), marker(c), line(a), line(d)]);
  const spool = open(dir);
  t.teardown(() => spool.close());
  t.same(await leftoversRead(spool), { segments: 2, rows: 3, interrupted: 1 });
  t.same(spool.leftovers.take().map(idOf), [c.request_id], 'only c');
  t.same(spool.leftovers.take(), [], 'taken once');
});

t.test('a clock stepped back: a later segment named before the one holding its marker still ends the request', async (t) => {
  const dir = tempDir(t, 'tollgate-left-');
  const [a, b] = [row(), row()];
  // Sequence 2 was made after 1, with a clock an hour behind: it sorts first, and holds a's row; 1 holds a's marker.
  segment(dir, '1764500000000-cccccccc-000001', [marker(a), marker(b)]);
  segment(dir, '1764496400000-cccccccc-000002', [marker(b), line(a)]);
  const spool = open(dir);
  t.teardown(() => spool.close());
  t.same(await leftoversRead(spool), { segments: 2, rows: 1, interrupted: 1 });
  t.same(spool.leftovers.take().map(idOf), [b.request_id], 'a ended (its row is in the segment that sorts first); b did not');
});

t.test("a later process's interrupted row for an earlier one's marker, named before it (that process's clock ahead), ends the request", async (t) => {
  const dir = tempDir(t, 'tollgate-left-');
  const [a, b] = [row(), row()];
  // Process A, its clock an hour ahead, left a's marker and b's; process B, started after with the clock right,
  // appended a's interrupted row (its recovery) and was killed before inserting A's segment: B's segment sorts first.
  segment(dir, '1764503600000-aaaa0000-000001', [marker(a), marker(b), line(b)]);
  segment(dir, '1764500000000-bbbb0000-000001', [line({ ...a, status: 'interrupted', total_tokens: 0 })]);
  const spool = open(dir);
  t.teardown(() => spool.close());
  t.same(await leftoversRead(spool), { segments: 2, rows: 2, interrupted: 0 }, 'no request left in flight: a has its interrupted row, b its row');
});

t.test('a segment with neither row nor marker is removed once read; a close while reading stops it and leaves the rest on disk', async (t) => {
  const dir = tempDir(t, 'tollgate-left-');
  segment(dir, '1764500000000-dddddddd-000001', ['["cut by a kill']); // a header, and a line never written whole
  segment(dir, '1764500000001-dddddddd-000002', [line(row())]);
  const spool = open(dir);
  t.same(await leftoversRead(spool), { segments: 1, rows: 1, interrupted: 0 });
  spool.close();
  t.same(readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort(), ['1764500000001-dddddddd-000002.jsonl'], 'the empty one is gone');

  const many = Array.from({ length: 20_000 }, row).map(line);
  for (let i = 0; i < 4; i++) segment(dir, `176450000001${i}-eeeeeeee-00000${i + 1}`, many.slice(i * 5000, (i + 1) * 5000));
  const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();
  const again = open(dir);
  again.close();
  t.equal(await again.leftovers.done, false, 'the reading stopped: not done');
  t.ok(again.leftovers.counts().rows < 20_000, `it stopped before the end (${again.leftovers.counts().rows} of 20000 rows read)`);
  t.same(again.leftovers.take(), [], 'and it gives no request as left in flight');
  t.same(readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort(), files, 'every leftover segment is still on disk');
});

t.test('a leftover file the disk will not delete does not stop the start: a zero-byte one is passed over, an empty one stays listed', async (t) => {
  const dir = tempDir(t, 'tollgate-left-');
  const zero = join(dir, '1764500000000-ffff0000-000001.jsonl');
  const header = join(dir, '1764500000001-ffff0000-000002.jsonl');
  writeFileSync(zero, '');
  segment(dir, '1764500000001-ffff0000-000002', []);
  segment(dir, '1764500000002-ffff0000-000003', [line(row())]);
  // chattr +i: even root cannot unlink it (the machine's /tmp is ext4).
  execFileSync('chattr', ['+i', zero, header]);
  t.teardown(() => execFileSync('chattr', ['-i', zero, header]));
  const spool = open(dir);
  t.teardown(() => spool.close());
  t.same(await leftoversRead(spool), { segments: 2, rows: 1, interrupted: 0 }, 'the header-only one listed (no row), the row counted');
  t.ok(existsSync(zero) && existsSync(header), 'both still there');
});
