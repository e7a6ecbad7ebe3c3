// A spool segment (src/store/spool.ts): a file of lines, or a memory segment holding what the disk refused. Its
// first line is its header, `{"$columns": [...]}`: the columns its rows are in. A row is a JSON array of its values
// in those columns (what ClickHouse's JSONCompactEachRow takes); a begin marker `{"$begin": [...]}` of a request in
// flight holds its row the same way. A segment an earlier version wrote has no header and a JSON object a row or a
// marker's row (JSONEachRow): it is read and inserted as it is. A line that does not parse (cut by a kill or a full
// disk) is skipped: it was never written whole, so never acknowledged as written. Segment names sort by creation
// time and carry a random instance id, so a name is unique and stable: it is the insert deduplication token of its
// rows, the same on every retry and every replay.

import { join } from 'node:path';

/** The key of a begin marker's line. */
export const BEGIN = '$begin';

/** The key of a segment's header line: the columns its row lines are in, in order. */
export const COLUMNS = '$columns';

/**
 * A segment's rows as lines, and the columns they are in: each line a JSON array of a row's values in `columns` (this
 * version's segments); or, `columns` null, each a JSON object (a segment an earlier version wrote).
 */
export interface RowLines {
  readonly columns: readonly string[] | null;
  readonly lines: readonly string[];
}

export interface Segment {
  readonly name: string;
  readonly path: string;
  rows: number;
  bytes: number;
  /** Creation time (ms), from the name. */
  readonly createdAt: number;
  /** A memory segment: lines the disk refused, held here instead of in `path` (there is no file). */
  readonly memory?: Buffer;
  /**
   * The row lines (no newline) of a segment whose file holds them all, in the spool's columns, kept for its insert so
   * it is not read back from disk (src/store/spool.ts); absent: read the file.
   */
  lines?: readonly string[];
}

export const EXT = '.jsonl';
export const NAME = /^(\d{13})-[0-9a-f]{8}-(\d{6})\.jsonl$/;

/** How every begin marker's line starts (the spool writes them so), and no row's line does. */
export const MARKER_PREFIX = `{"${BEGIN}":`;

/** How a segment's header line starts. */
const HEADER_PREFIX = `{"${COLUMNS}":`;

/** A segment's header line: the columns of the rows that follow it. */
export const headerLine = (columns: readonly string[]): string => `${HEADER_PREFIX}${JSON.stringify(columns)}}\n`;

/**
 * A row's line (no newline): its values in `columns`, as a JSON array; a column the row does not hold is null, which
 * the insert takes as the column's default (`input_format_null_as_default`, src/store/client.ts). Under half the
 * bytes of the row as an object, which ClickHouse parses in about two thirds of the time (docs/benchmarks.md,
 * "The rows as arrays").
 */
export function rowLine(columns: readonly string[], row: Readonly<Record<string, unknown>>): string {
  let line = lineMakers.get(columns);
  if (line === undefined) {
    line = lineMaker(columns);
    lineMakers.set(columns, line);
  }
  return line(row);
}

type LineMaker = (row: Readonly<Record<string, unknown>>) => string;

/**
 * The line maker of each set of columns, by the array's identity: a caller passes the same array each time (the
 * spool's columns; one in a process, a few more in tests), not one made per row.
 */
const lineMakers = new WeakMap<readonly string[], LineMaker>();

/**
 * A function that reads a row's columns by name, one load each (`row["request_id"] ?? null, ...`), into an array
 * literal: about half the time of reading them in a loop by a varying key, where every read is a lookup of its own
 * (V8's megamorphic keyed load; docs/benchmarks.md, "A row's line made by a function of its columns"). Each name is
 * written with JSON.stringify, which makes any string a valid JavaScript string literal: the code holds no other
 * text from the names. Code made at run time, as fastify's router (find-my-way) makes its own: a Node started with
 * `--disallow-code-generation-from-strings` does not start the gateway either way.
 */
function lineMaker(columns: readonly string[]): LineMaker {
  const values = columns.map((c) => `row[${JSON.stringify(c)}] ?? null`).join(', ');
  return new Function('row', `return JSON.stringify([${values}]);`) as LineMaker;
}

/**
 * A row line as its row: an array is read in `columns` (null when there are none: a line no header describes), an
 * object is the row itself (an earlier version's line). Null for a line that does not parse as a row.
 */
export function rowOf<Row>(line: string, columns: readonly string[] | null): Row | null {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return null;
  }
  return asRow<Row>(v, columns);
}

/** A parsed row line (or a marker's row) as its row: see rowOf. */
function asRow<Row>(v: unknown, columns: readonly string[] | null): Row | null {
  if (Array.isArray(v)) {
    if (columns === null || v.length !== columns.length) return null;
    return rowMaker(columns)(v) as Row;
  }
  return v !== null && typeof v === 'object' ? (v as Row) : null;
}

type RowMaker = (values: readonly unknown[]) => Record<string, unknown>;

/** The row maker of each set of columns: by the array (a segment's header, read once), else by the names. */
const rowMakers = new WeakMap<readonly string[], RowMaker>();
const rowMakersByName = new Map<string, RowMaker>();

/**
 * A function that makes a row of a set of columns as one object literal (`{"request_id": v[0], ...}`), as lineMaker
 * makes a line: every row one shape, instead of the columns added one by one by a varying name (each a lookup of its
 * own, the object turned into a dictionary): reading a million leftover rows spent more time there than in JSON.parse.
 * A quoted key is the literal's own property, but `"__proto__": x` would set the prototype: that one is computed.
 */
function rowMaker(columns: readonly string[]): RowMaker {
  let make = rowMakers.get(columns);
  if (make !== undefined) return make;
  const name = JSON.stringify(columns); // each set its own key: no two sets of names join into one
  make = rowMakersByName.get(name);
  if (make === undefined) {
    const fields = columns.map((c, i) => `${c === '__proto__' ? `[${JSON.stringify(c)}]` : JSON.stringify(c)}: v[${i}]`).join(', ');
    make = new Function('v', `return { ${fields} };`) as RowMaker;
    if (rowMakersByName.size < 64) rowMakersByName.set(name, make); // a few sets in a process; damaged headers are not kept
  }
  rowMakers.set(columns, make);
  return make;
}

/** A header line's columns; null when it is not one whole. */
function headerOf(line: string): string[] | null {
  try {
    const cols = (JSON.parse(line) as Record<string, unknown>)[COLUMNS];
    return Array.isArray(cols) && cols.every((c) => typeof c === 'string') ? cols : null;
  } catch {
    return null;
  }
}

/** Lines of `rejected.jsonl`: each row ClickHouse refused as data, with the first line of the reason. */
export function rejectedLines(rows: readonly unknown[], err: unknown): string {
  const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 500);
  return rows.map((row) => `${JSON.stringify({ reason, row })}\n`).join('');
}

/**
 * A begin marker's line for `row`: `{"$begin": [...]}`, its values in `columns` as a row line holds them, so the
 * interrupted row it becomes at the next start is exactly the row (a zero stays a zero, a null a null). Under half
 * the row as an object (346 bytes against 753 at a request's start; 472 as the sparse object markers were). A marker
 * an earlier version wrote, an object without its zero, empty, false and null columns, reads as that object: each
 * column it leaves out is null in its interrupted row's line, the column's default.
 */
export function markerLine(columns: readonly string[], row: Readonly<Record<string, unknown>>): string {
  return `${MARKER_PREFIX}${rowLine(columns, row)}}\n`;
}

/** Rows (not markers, not torn lines) in a segment's text; `columns` as for rowLines. */
export function countRows(buf: Buffer, columns: readonly string[] | null = null): number {
  return rowLines(buf.toString('utf8'), columns).lines.length;
}

/**
 * The whole lines of a segment's text, parsed: rows, and the begin markers of requests in flight (read at open). A whole
 * row line it cannot read (an array no header describes, one of another length than its header's columns, a line
 * damaged on disk) is a row all the same, yielded empty (`{}`): counted, so its file is kept and the writer sets it
 * aside (parseRows), never dropped unseen. A torn last piece, a line the disk cut (`!`) and a damaged header or marker
 * (unreadableRow) are not rows.
 */
export function* lines<Row>(content: string): Generator<{ marker: boolean; row: Row }> {
  let columns: readonly string[] | null = null;
  const texts = content.split('\n');
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i]!;
    if (text === '') continue;
    if (text.startsWith(HEADER_PREFIX)) {
      columns = headerOf(text) ?? columns;
      continue;
    }
    if (text.startsWith(MARKER_PREFIX)) {
      const marker = rowOf<Record<string, unknown>>(text, null);
      const row = marker !== null && Object.hasOwn(marker, BEGIN) ? asRow<Row>(marker[BEGIN], columns) : null;
      if (row !== null) yield { marker: true, row };
      continue;
    }
    const row = rowOf<Row>(text, columns);
    if (row !== null) yield { marker: false, row };
    else if (i < texts.length - 1 && unreadableRow(text)) yield { marker: false, row: {} as Row };
  }
}

/**
 * A whole line (newline ended) that does not read as a row and is one all the same: not a line the disk cut (ended
 * with `!`), not the spool's own (a header or marker: `{"$`, or damaged at its start, ended as only they end, `]}`).
 */
const unreadableRow = (line: string): boolean => !line.endsWith('!') && !isMeta(line) && !line.endsWith(']}');

/**
 * The row lines of a segment's text, as they are (the one definition of a segment's rows: what is inserted, read back
 * and counted), and the columns its header names (null: an earlier version's segment, whose rows are objects): no
 * header, no marker (both passed over by their prefix), no line the disk cut (ended with `!`), and the last piece
 * without its newline only when it is whole (a kill can stop a write there); only the header and that piece are
 * parsed. A whole line that cannot be read as a row (an array no header describes: its header damaged; one of another
 * length than the header's columns; bytes damaged on disk) is kept: the insert fails as data and the writer's parsing
 * path sets it aside (parseRows), counted, instead of it vanishing. `columns`: those of rows before any header (the
 * spool's own, for text that never left its process: a memory segment, what waits for the disk). A segment's rows are
 * in one set of columns: one process writes a file, and a second header in it (after what waited for the disk moved
 * there) repeats the first.
 */
export function rowLines(content: string, columns: readonly string[] | null = null): RowLines {
  const out: string[] = [];
  let from = 0;
  for (let nl = content.indexOf('\n'); nl !== -1; nl = content.indexOf('\n', from)) {
    const line = content.slice(from, nl);
    from = nl + 1;
    if (line === '' || line.endsWith('!')) continue;
    if (isMeta(line)) {
      if (line.startsWith(HEADER_PREFIX)) columns = headerOf(line) ?? columns;
      continue; // a header or a marker
    }
    out.push(line);
  }
  const last = content.slice(from);
  if (last !== '' && !isMeta(last) && (rowOf(last, columns) !== null || (columns === null && isArray(last)))) out.push(last);
  return { columns, lines: out };
}

/** Does `text` parse as a JSON array (a whole row line, whatever its columns)? */
function isArray(text: string): boolean {
  try {
    return Array.isArray(JSON.parse(text));
  } catch {
    return false;
  }
}

/** A line the spool writes that is not a row (a header or a begin marker: `{"$...`), told by its first three characters. */
const isMeta = (line: string): boolean =>
  line.charCodeAt(0) === 0x7b /* { */ && line.charCodeAt(1) === 0x22 /* " */ && line.charCodeAt(2) === 0x24; /* $ */

/**
 * A segment's row lines, parsed (the writer's path for a segment ClickHouse refused as data). A line that cannot be
 * read as a row (see rowLines), and every line when `unmapped` (ClickHouse refused the header's columns: a name it
 * lacks or repeats, so no value can be put in its column by name), stays as its text, a JSON string: ClickHouse
 * refuses that as a row (CANNOT_PARSE_INPUT_ASSERTION_FAILED), so the writer sets it aside alone (rejected.jsonl, the
 * line as it was; counted as dropped, `rejected`) and never stores it under a wrong name. A damaged header or marker
 * is not a row: passed over.
 */
export function parseRows<Row>({ columns, lines: texts }: RowLines, unmapped = false): Row[] {
  const rows: Row[] = [];
  for (const line of texts) {
    const row = unmapped && columns !== null ? null : rowOf<Row>(line, columns);
    if (row !== null) rows.push(row);
    else if (unreadableRow(line) || unmapped) rows.push(line as Row);
  }
  return rows;
}

/** The rows of a segment's text, parsed; `columns` as for rowLines. */
export function rowsOf<Row>(content: string, columns: readonly string[] | null = null): Row[] {
  return parseRows(rowLines(content, columns));
}

/**
 * The id of a row line in `columns`: read from its first value when that is `idKey`'s (the rows put it first), or
 * from an object line's first key; else parsed. Null for a line that does not parse (the insert then fails as data,
 * and the writer takes the parsing path).
 */
export function lineId(line: string, idKey: string, columns: readonly string[] | null): string | null {
  const head = columns === null ? `{"${idKey}":"` : columns[0] === idKey ? '["' : null;
  if (head !== null && line.startsWith(head)) {
    const end = line.indexOf('"', head.length);
    if (end !== -1 && line.charCodeAt(end - 1) !== 0x5c /* \\ */) return line.slice(head.length, end);
  }
  const v = rowOf<Record<string, unknown>>(line, columns)?.[idKey];
  return v === undefined || v === null ? null : String(v);
}

/** A new, empty segment in `dir`: its name sorts by creation time, then this process's `instance` id and `seq`. */
export function newSegment(dir: string, instance: string, seq: number): Segment {
  const createdAt = Date.now();
  const name = `${String(createdAt).padStart(13, '0')}-${instance}-${String(seq % 1_000_000).padStart(6, '0')}`;
  return { name, path: join(dir, name + EXT), rows: 0, bytes: 0, createdAt };
}
