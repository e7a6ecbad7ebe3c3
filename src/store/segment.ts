// A spool segment (src/store/spool.ts): a file of JSON lines, or a memory segment holding what the disk refused.
// A line is a row, or a begin marker `{"$begin": row}` of a request in flight; a line that does not parse (cut by a
// kill or a full disk) is skipped: it was never written whole, so never acknowledged as written. Segment names sort by
// creation time and carry a random instance id, so a name is unique and stable: it is the insert deduplication token
// of its rows, the same on every retry and every replay.

import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The key of a begin marker's line. */
export const BEGIN = '$begin';

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
   * The row lines (no newline) of a segment whose file holds them all, kept for its insert so it is not read back
   * from disk (src/store/spool.ts); absent: read the file.
   */
  lines?: readonly string[];
}

export const EXT = '.jsonl';
export const NAME = /^(\d{13})-[0-9a-f]{8}-(\d{6})\.jsonl$/;

/** How every begin marker's line starts (the spool writes them so), and no row's line does. */
export const MARKER_PREFIX = `{"${BEGIN}":`;

/** Lines of `rejected.jsonl`: each row ClickHouse refused as data, with the first line of the reason. */
export function rejectedLines(rows: readonly unknown[], err: unknown): string {
  const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 500);
  return rows.map((row) => `${JSON.stringify({ reason, row })}\n`).join('');
}

/**
 * A begin marker's line for `row`: its columns that are zero, empty, false or null are left out. When the marker
 * becomes an interrupted row (at the next start), ClickHouse fills each column the row leaves out with the column's
 * default (`JSONEachRow`, `input_format_defaults_for_omitted_fields`), which for every `requests` column a marker can
 * leave out is that same value (test/store/writer.test.ts compares such a row with its whole twin). A marker written
 * at a request's start is about half its row, and the spool writes (and fsyncs) about a quarter fewer bytes a request
 * (docs/benchmarks.md, "Two builds at once, and the begin marker at half a row"). A marker an earlier version wrote
 * whole reads the same.
 */
export function markerLine(row: unknown): string {
  const cols = row as Readonly<Record<string, unknown>>;
  const kept: Record<string, unknown> = {};
  for (const k in cols) {
    const v = cols[k];
    if (v !== 0 && v !== '' && v !== false && v !== null && v !== undefined) kept[k] = v;
  }
  return `${MARKER_PREFIX}${JSON.stringify(kept)}}\n`;
}

/** Rows (not markers, not torn lines) in a segment's text. */
export function countRows(buf: Buffer): number {
  return rowLines(buf.toString('utf8')).length;
}

/** The whole lines of a segment's text, parsed: rows, and the begin markers of requests in flight (read at open). */
export function* lines<Row>(content: string): Generator<{ marker: boolean; row: Row }> {
  for (const text of content.split('\n')) {
    if (text === '') continue;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      continue; // a line cut by a kill in the middle of its write: never acknowledged as written
    }
    if (parsed !== null && typeof parsed === 'object' && Object.hasOwn(parsed, BEGIN)) yield { marker: true, row: parsed[BEGIN] as Row };
    else yield { marker: false, row: parsed as Row };
  }
}

/**
 * The row lines of a segment's text, as they are (the one definition of a segment's rows: what is inserted, read back
 * and counted): no marker (passed over by its prefix, not parsed), no line the disk cut (ended with `!`), and the last
 * piece without its newline only when it is a whole row (a kill can stop a write there); only that piece is parsed.
 * Their text is what ClickHouse's JSONEachRow takes.
 */
export function rowLines(content: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (let nl = content.indexOf('\n'); nl !== -1; nl = content.indexOf('\n', from)) {
    const line = content.slice(from, nl);
    from = nl + 1;
    if (line === '' || line.startsWith(MARKER_PREFIX) || line.endsWith('!')) continue;
    out.push(line);
  }
  const last = content.slice(from);
  if (last !== '' && !last.startsWith(MARKER_PREFIX) && parsesAsObject(last)) out.push(last);
  return out;
}

/** The rows of a segment's text, parsed (the writer's path for a segment ClickHouse refused as data). */
export function rowsOf<Row>(content: string): Row[] {
  const rows: Row[] = [];
  for (const line of rowLines(content)) {
    try {
      rows.push(JSON.parse(line) as Row);
    } catch {} // a line damaged on disk: never acknowledged as written
  }
  return rows;
}

function parsesAsObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * The id of a row line: read from its first key when that is `idKey` (the rows put it first), else parsed. Null for
 * a line that does not parse (the insert then fails as data, and the writer takes the parsing path).
 */
export function lineId(line: string, idKey: string): string | null {
  const head = `{"${idKey}":"`;
  if (line.startsWith(head)) {
    const end = line.indexOf('"', head.length);
    if (end !== -1 && line.charCodeAt(end - 1) !== 0x5c /* \\ */) return line.slice(head.length, end);
  }
  try {
    const v = (JSON.parse(line) as Record<string, unknown>)[idKey];
    return v === undefined || v === null ? null : String(v);
  } catch {
    return null;
  }
}

/** A new, empty segment in `dir`: its name sorts by creation time, then this process's `instance` id and `seq`. */
export function newSegment(dir: string, instance: string, seq: number): Segment {
  const createdAt = Date.now();
  const name = `${String(createdAt).padStart(13, '0')}-${instance}-${String(seq % 1_000_000).padStart(6, '0')}`;
  return { name, path: join(dir, name + EXT), rows: 0, bytes: 0, createdAt };
}

/**
 * The segments an earlier process left in `dir`, oldest first (empty files removed), their bytes, and the rows of the
 * requests it left in flight: a begin marker whose request has no row in any of them (DESIGN.md decision 2).
 */
export function leftSegments<Row>(dir: string, idOf: (row: Row) => string): { segments: Segment[]; bytes: number; interrupted: Row[] } {
  const begun = new Map<string, Row>();
  const ended = new Set<string>();
  const segments: Segment[] = [];
  let total = 0;
  for (const file of readdirSync(dir).filter((f) => NAME.test(f)).sort()) {
    const path = join(dir, file);
    const bytes = statSync(path).size;
    if (bytes === 0) {
      rmSync(path, { force: true });
      continue;
    }
    let rows = 0;
    for (const line of lines<Row>(readFileSync(path, 'utf8'))) {
      if (line.marker) begun.set(idOf(line.row), line.row);
      else {
        rows++;
        ended.add(idOf(line.row));
      }
    }
    segments.push({ name: file.slice(0, -EXT.length), path, rows, bytes, createdAt: Number(NAME.exec(file)![1]) });
    total += bytes;
  }
  return { segments, bytes: total, interrupted: [...begun].filter(([id]) => !ended.has(id)).map(([, row]) => row) };
}
