// The segments an earlier process left in the spool (DESIGN.md decision 2), read after the gateway listens: a start
// lists them (a directory read and a stat each), and their lines are read in the background, a segment at a time and
// yielding to the event loop every few hundred lines, so a large backlog neither holds the listen back (a 1 GiB
// spool took 39 s before `/health` answered) nor sits in memory whole. What reads the store waits for the reading
// (app.ts): the quota and the budget count the rows found there.

import { readdirSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { EXT, lines, NAME, type Segment } from './segment.js';

/** Lines read between two turns of the event loop. */
const SLICE = 500;

/** The segments an earlier process left in `dir`, oldest first, their rows not counted yet (readLeftovers); empty files removed. */
export function leftoverFiles(dir: string): Segment[] {
  const segments: Segment[] = [];
  for (const file of readdirSync(dir).filter((f) => NAME.test(f)).sort()) {
    const path = join(dir, file);
    const bytes = statSync(path).size;
    if (bytes === 0) removeIfCan(path);
    else segments.push({ name: file.slice(0, -EXT.length), path, rows: 0, bytes, createdAt: Number(NAME.exec(file)![1]) });
  }
  return segments;
}

export interface LeftoverReading<Row> {
  /** A row's id (what a begin marker and its row share). */
  readonly idOf: (row: Row) => string;
  /** Given each row (not the markers) as it is read. */
  readonly onRow?: (row: Row) => void;
  /** Stop reading (the spool closed): the segments not read yet keep `rows` 0 and stay on disk for the next start. */
  readonly stopped: () => boolean;
}

/**
 * Read `segs` (leftoverFiles), oldest first: each one's rows counted into its `rows` and given to `onRow`; returns the
 * segments holding neither row nor marker (a header alone, lines never written whole: removed from disk here, for the
 * caller to drop) and the rows of the requests left in flight: a begin marker whose request has no row.
 *
 * A request's row is never in a segment of its process before its marker's (the spool marks only requests in
 * flight, and each seal marks them again in the new segment), so a marker is kept only until the segment holding its
 * row has been read: memory bounded by a segment and the requests in flight, not by the spool. Two exceptions, as
 * segments sort by their creation time: the interrupted row a later process appended for an earlier one's marker (a
 * restart that was killed in its turn) sorts before that marker when the earlier process's clock was ahead, so the
 * ids of `interrupted` rows (few) are kept to the end and end their markers then; and a clock stepped back while one
 * process ran puts a later segment of its first, seen in the sequence numbers: the markers left at the end are then
 * checked against every segment's rows once more.
 * A segment that cannot be read is left as it is, for the writer (it retries a segment it cannot read, and gives up on
 * one that is gone).
 */
export async function readLeftovers<Row>(segs: readonly Segment[], o: LeftoverReading<Row>): Promise<{ empty: Segment[]; interrupted: Row[] }> {
  const begun = new Map<string, Row>();
  /** The ids of `interrupted` rows: what a later process appends for an earlier one's marker (writer.ts, settleRecovered). */
  const recovered = new Set<string>();
  const empty: Segment[] = [];
  for (const seg of segs) {
    if (o.stopped()) break;
    const text = await readText(seg);
    if (text === null) continue;
    const ended: string[] = [];
    let markers = 0;
    for await (const slice of slices<Row>(text)) {
      if (o.stopped()) return { empty, interrupted: [] }; // this segment half read: kept as it is
      for (const line of slice) {
        if (line.marker) {
          markers++;
          begun.set(o.idOf(line.row), line.row);
        } else {
          const id = o.idOf(line.row);
          ended.push(id);
          if ((line.row as Record<string, unknown>).status === 'interrupted') recovered.add(id);
          o.onRow?.(line.row);
        }
      }
    }
    for (const id of ended) begun.delete(id);
    seg.rows = ended.length;
    if (ended.length === 0 && markers === 0) {
      // One the disk will not delete stays listed: the writer takes it (no row) and deletes it when it can.
      if (removeIfCan(seg.path)) empty.push(seg);
    }
  }
  for (const id of recovered) begun.delete(id);
  if (begun.size > 0 && outOfOrder(segs)) for (const seg of segs) await endedIn(seg, begun, o);
  return { empty, interrupted: [...begun.values()] };
}

/** Remove a file holding nothing to replay; false when the disk will not (a zero-byte one is then passed over). */
function removeIfCan(path: string): boolean {
  try {
    rmSync(path, { force: true });
    return true;
  } catch {
    return false;
  }
}

const readText = (seg: Segment): Promise<string | null> => readFile(seg.path, 'utf8').catch(() => null);

/** A segment's lines (segment.ts `lines`), SLICE at a time, with a turn of the event loop after each slice. */
async function* slices<Row>(text: string): AsyncGenerator<{ marker: boolean; row: Row }[]> {
  let slice: { marker: boolean; row: Row }[] = [];
  for (const line of lines<Row>(text)) {
    slice.push(line);
    if (slice.length < SLICE) continue;
    yield slice;
    slice = [];
    await nextTurn();
  }
  if (slice.length > 0) yield slice;
}

/** Take off `begun` the requests whose row `seg` holds. */
async function endedIn<Row>(seg: Segment, begun: Map<string, Row>, o: LeftoverReading<Row>): Promise<void> {
  const text = await readText(seg);
  if (text === null) return;
  for await (const slice of slices<Row>(text)) for (const line of slice) if (!line.marker) begun.delete(o.idOf(line.row));
}

/** Does some process's list of segments, in name order, go back in its sequence (a clock stepped back while it ran)? */
function outOfOrder(segs: readonly Segment[]): boolean {
  const last = new Map<string, number>();
  for (const { name } of segs) {
    const [, instance = '', seq = ''] = name.split('-');
    const s = Number(seq);
    // The sequence wraps at a million segments: from the top of it to its bottom is in order.
    const prev = last.get(instance);
    if (prev !== undefined && s <= prev && !(prev > 990_000 && s < 10_000)) return true;
    last.set(instance, s);
  }
  return false;
}

/** The segments an earlier process left, as the spool holds them while and after they are read (readLeftovers). */
export class Leftovers<Row> {
  /** Resolves true once every segment is read, false when reading stopped first (the spool closed). */
  readonly done: Promise<boolean>;
  #segs: readonly Segment[];
  #reading = true;
  #interrupted = 0;
  #recovered: Row[] = [];

  /** Read `segs` now, in the background; `removed` is told the segments found empty (off disk already). */
  constructor(segs: readonly Segment[], o: LeftoverReading<Row>, removed: (empty: readonly Segment[]) => void) {
    this.#segs = segs;
    this.done = readLeftovers(segs, o).then(({ empty, interrupted }) => {
      removed(empty);
      this.#segs = segs.filter((s) => !empty.includes(s));
      this.#reading = false;
      if (o.stopped()) return false;
      this.#interrupted = interrupted.length;
      this.#recovered = interrupted;
      return true;
    });
  }

  get reading(): boolean {
    return this.#reading;
  }

  /** Why the store is not to be read yet while they are read (/ready), or null. */
  get reason(): string | null {
    if (!this.#reading) return null;
    const { segments, rows } = this.counts();
    return `the spool is reading the ${segments} segments an earlier process left (${rows} rows so far)`;
  }

  /** The segments (rows counted so far) and the requests left in flight (once read). */
  counts(): { segments: number; rows: number; interrupted: number } {
    return { segments: this.#segs.length, rows: this.#segs.reduce((n, s) => n + s.rows, 0), interrupted: this.#interrupted };
  }

  /**
   * The interrupted rows, once (then none): the writer appends those the store has no row of. A marker an earlier
   * version wrote left out its zero, empty, false and null columns: null in its line, each column's default.
   */
  take(): Row[] {
    return this.#recovered.splice(0);
  }
}
