// The spool (DESIGN.md decision 2; docs/recording.md, "The spool"): every finished row is appended to a segment file
// under `<data_dir>/spool` as soon as it exists, one write(2) per event-loop turn, so a killed process loses nothing
// that reached the OS; the file is fsync'ed every `commit_ms`. The batch writer inserts the sealed segments in order
// (an earlier process's first), deleting each once ClickHouse took it.
//
// Requests in flight: a begin marker (`{"$begin": <its row as it would be then>}`) goes out with the turn's write (its
// row taken then, after the handler's synchronous start: routed), and each seal copies the markers of requests still
// in flight, refreshed, into the new segment, so the newest segment holds a marker for every request in flight. A
// marker with no row in any segment left at the next start is recorded as a row with status `interrupted`.
//
// A disk that refuses writes (full, read-only, failing): what it refused waits in memory (spool-file.ts) and at the
// next seal becomes a memory segment, inserted like any other (only a process that dies meanwhile loses it). The write
// is tried again every 250 ms, each time in a new segment file (a remounted disk is reached by path); every file gets
// its header before its first row or marker. The newest segments keep in memory the lines of the rows written whole
// (KEEP_LINES), so the insert does not read back on the event loop what was written a second before.

import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { OpenFile } from './spool-file.js';
import { countRows, headerLine, newSegment, markerLine, rejectedLines, rowLine, rowLines, type RowLines, type Segment } from './segment.js';
import { leftoverFiles, Leftovers } from './leftovers.js';
import { ClearedMap } from '../core/cleared-map.js';

export interface SpoolOptions {
  /** The spool directory (created when missing). */
  readonly dir: string;
  /** fsync the open segment this often (ms). */
  readonly commitMs: number;
  /** Bytes on disk past which new rows are refused (and counted as dropped by the caller). */
  readonly maxBytes: number;
  /**
   * The columns of a row, in the order its line holds their values (src/store/segment.ts): the insert's columns. Each
   * segment names them in its header, so a segment written before a column was added is still read right.
   */
  readonly columns: readonly string[];
}

/** How rows and in-flight markers are matched: the id a row carries. */
export type RowId<Row> = (row: Row) => string;

/** How soon a write the disk refused is tried again. */
const RETRY_WRITE_MS = 250;

/** How many of the newest sealed segments keep their row lines in memory for their insert (older: read from disk). */
const KEEP_LINES = 2;

/** What the batch writer needs of a spool: this one on disk, or (benchmarks only, to measure it) one in memory. */
export type SpoolPort<Row extends Readonly<Record<string, unknown>>> = Pick<
  Spool<Row>,
  'leftovers' | 'rows' | 'bytes' | 'oldest' | 'openRows' | 'inFlight' | 'failure' | 'append' | 'begin' | 'seal' | 'readLines' | 'remove' | 'reject' | 'close'
>;

export class Spool<Row extends Readonly<Record<string, unknown>>> {
  readonly #opts: SpoolOptions;
  readonly #idOf: RowId<Row>;
  /** Requests in flight: their id and how to snapshot their row now. */
  readonly #inFlight = new ClearedMap<string, () => Row>();
  /** Requests begun in this turn, whose marker the turn's write adds (none when their row came first). */
  #unmarked: string[] = [];
  /**
   * The segments an earlier process left: listed at open, read in the background (leftovers.ts: `done`), their rows
   * counted, the requests it left in flight found as `interrupted` rows for the writer (`take`).
   */
  readonly leftovers: Leftovers<Row>;
  readonly #instance = randomBytes(4).toString('hex');
  readonly #headerLine: string;
  #seq = 0;
  #file: OpenFile;
  /** Closed segments waiting for the store, oldest first. */
  readonly #sealed: Segment[] = [];
  #pending: string[] = [];
  #pendingRows = 0;
  /** Row lines (no newline) of the rows in `#pending`. */
  #pendingLines: string[] = [];
  #scheduled = false;
  #bytes = 0;
  #undeleted: Segment[] = []; // acknowledged, and their file not deleted yet (the disk refused): still in #bytes
  #closed = false;
  #failure: unknown = null;
  #retry: NodeJS.Timeout | null = null;
  readonly #commitTimer: NodeJS.Timeout;

  /**
   * Open the spool in `opts.dir`; segments found there (an earlier process's) are sealed, oldest first, and read in
   * the background (`leftovers`); `leftover` is given each row of those segments (not the markers) as it is read.
   */
  constructor(opts: SpoolOptions, idOf: RowId<Row>, leftover?: (row: Row) => void) {
    this.#opts = opts;
    this.#idOf = idOf;
    this.#headerLine = headerLine(opts.columns);
    mkdirSync(opts.dir, { recursive: true });
    const left = leftoverFiles(opts.dir);
    this.#sealed.push(...left);
    this.#bytes = left.reduce((n, s) => n + s.bytes, 0);
    this.#file = new OpenFile(this.#newSegment());
    this.leftovers = new Leftovers<Row>(left, { idOf, onRow: leftover, stopped: () => this.#closed }, (empty) => {
      for (const seg of empty) this.#sealed.splice(this.#sealed.indexOf(seg), 1);
      this.#bytes -= empty.reduce((n, s) => n + s.bytes, 0);
    });
    this.#commitTimer = setInterval(() => {
      if (!this.#closed) this.#file.commit();
    }, opts.commitMs);
    this.#commitTimer.unref();
  }

  /** Rows spooled and not yet deleted (written to the store), the open segment's included. */
  get rows(): number {
    return this.#sealed.reduce((n, s) => n + s.rows, 0) + this.#file.seg.rows + this.#pendingRows;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Creation time of the oldest segment holding rows, or null when the spool is empty. */
  get oldest(): number | null {
    if (this.#sealed.length > 0) return this.#sealed[0]!.createdAt;
    return this.openRows > 0 ? this.#file.seg.createdAt : null;
  }

  /** Rows in the open segment (not yet sealed), the ones still in this turn's buffer included. */
  get openRows(): number {
    return this.#file.seg.rows + this.#pendingRows;
  }

  /** Append a row (it ends its request, if one is in flight); false (nothing written) when full or closed. */
  append(row: Row): boolean {
    if (this.#closed) return false;
    this.#inFlight.delete(this.#idOf(row));
    const json = rowLine(this.#opts.columns, row);
    const line = `${json}\n`;
    if (!this.#fits(line)) return false;
    this.#header();
    this.#pending.push(line);
    this.#pendingLines.push(json);
    this.#pendingRows++;
    this.#bytes += line.length;
    this.#scheduleWrite();
    return true;
  }

  /** A request began: its marker goes with this turn's write (snapshot taken then: routed) and every new segment's. */
  begin(id: string, snapshot: () => Row): void {
    if (this.#closed) return;
    this.#inFlight.set(id, snapshot);
    this.#unmarked.push(id);
    this.#scheduleWrite();
  }

  /** Requests begun and not yet ended. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * The open segment's header, its first line: queued before the first row or marker that goes to its file (a
   * segment with neither has no bytes: an idle spool holds none).
   */
  #header(): void {
    if (this.#file.headed) return;
    this.#file.headed = true;
    this.#pending.push(this.#headerLine);
    this.#bytes += this.#headerLine.length;
  }

  /** Does `line` fit under `maxBytes`, with the header it brings when it is its file's first? */
  #fits(line: string): boolean {
    return this.#bytes + line.length + (this.#file.headed ? 0 : this.#headerLine.length) <= this.#opts.maxBytes;
  }

  /** Does `buf` (what waits for the disk, from a line's start) start with the header? */
  #startsHeaded = (buf: Buffer): boolean => buf.length >= this.#headerLine.length && buf.toString('utf8', 0, this.#headerLine.length) === this.#headerLine;

  #mark(row: Row): void {
    const line = markerLine(this.#opts.columns, row);
    if (!this.#fits(line)) return; // full: the row itself will be counted when it comes
    this.#header();
    this.#pending.push(line);
    this.#bytes += line.length;
  }

  #scheduleWrite(): void {
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#writeOut());
    }
  }

  /** One write(2) for every row appended, and every request begun, in this turn. */
  #writeOut(): void {
    this.#scheduled = false;
    const begun = this.#unmarked;
    if (begun.length > 0) this.#unmarked = [];
    for (const id of begun) if (this.#inFlight.has(id)) this.#mark(this.#inFlight.get(id)!()); // ended already: no marker
    const file = this.#file;
    let written: string[] | null = null;
    if (this.#pending.length > 0) {
      const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
      const buf = Buffer.from(text);
      // A string's length counts UTF-16 units; the file counts bytes.
      this.#bytes += buf.length - text.length;
      file.seg.rows += this.#pendingRows;
      file.seg.bytes += buf.length;
      this.#pending = [];
      this.#pendingRows = 0;
      written = this.#pendingLines;
      this.#pendingLines = [];
      file.queue(buf);
    }
    const wrote = file.write(written);
    if (wrote === 'written') this.#failure = null;
    else if (wrote !== 'nothing') {
      // A full or read-only disk: what did not reach the file waits (bounded by maxBytes, counted in `bytes`) and is
      // tried again; the next seal moves it to a memory segment.
      this.#failure = wrote.refused;
      this.#retryLater();
    }
  }

  /** While the disk refuses: every 250 ms, a new segment file (by path: a disk remounted since is reached), and the write. */
  #retryLater(): void {
    if (this.#retry !== null || this.#closed) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      if (this.#failure === null || this.#closed) return;
      this.#reopen();
      this.#writeOut();
      if (this.#failure !== null) this.#retryLater();
    }, RETRY_WRITE_MS);
    this.#retry.unref();
  }

  /**
   * Write to a new segment file from now on; what waits for the disk goes to the new file, a line cut in the old one
   * whole (the old one's cut part is ended with `!`, through its path). The old file is sealed when it holds rows.
   * False, and nothing changed but the cut line's ending, when the disk refuses.
   */
  #reopen(): boolean {
    let file: OpenFile;
    try {
      file = new OpenFile(this.#newSegment());
    } catch (err) {
      this.#failure = err;
      return false;
    }
    const old = this.#file;
    this.#cutLineEnded(old);
    try {
      old.endCutLineByPath();
    } catch (err) {
      file.close();
      rmSync(file.seg.path, { force: true });
      this.#failure = err;
      return false;
    }
    old.syncAndClose();
    const moved = old.take();
    if (moved !== null) {
      const rows = countRows(moved, this.#opts.columns);
      old.seg.rows -= rows;
      old.seg.bytes -= moved.length;
      file.seg.rows += rows;
      file.seg.bytes += moved.length;
    }
    // The new file's header goes first: before what waits for the disk (which holds it already when the old file got
    // none of it) and what was queued since; with neither, it is queued with whatever comes first.
    file.headed = moved !== null || this.#pending.length > 0;
    const header = file.headed && (moved === null || !this.#startsHeaded(moved)) ? Buffer.from(this.#headerLine) : null;
    if (header !== null) {
      file.seg.bytes += header.length;
      this.#bytes += header.length;
    }
    const first = header === null ? moved : moved === null ? header : Buffer.concat([header, moved]);
    if (first !== null) file.queue(first);
    if (old.seg.rows > 0) this.#sealed.push(old.seg);
    else {
      this.#bytes -= old.seg.bytes;
      rmSync(old.seg.path, { force: true });
    }
    this.#file = file;
    file.lines = null; // what waited for the disk goes to this file: read from it
    this.#failure = null; // the disk took a new file; the write that follows says whether it takes data
    for (const snapshot of this.#inFlight.values()) this.#mark(snapshot());
    return true;
  }

  /** A line the disk cut in `file` is to be ended with `!\n` there: its cut part counts in the file until it is deleted. */
  #cutLineEnded(file: OpenFile): void {
    const added = file.endCutLine();
    this.#bytes += added;
    file.seg.bytes += added;
  }

  /** The disk refuses: what waits for it becomes a memory segment, which the writer inserts like any other. */
  #spill(): void {
    const file = this.#file;
    this.#cutLineEnded(file);
    const moved = Buffer.from(file.take()!); // a copy: it may be a view of a larger buffer
    const rows = countRows(moved, this.#opts.columns);
    file.seg.rows -= rows;
    file.seg.bytes -= moved.length;
    if (this.#startsHeaded(moved)) file.headed = false; // the file never got its header: the next line to it is one
    this.#sealed.push({ ...this.#newSegment(), path: '', rows, bytes: moved.length, memory: moved });
  }

  /** Why the spool cannot write to its directory now (a full or read-only disk), or null while it can. */
  get failure(): unknown {
    return this.#failure;
  }

  /**
   * Close the open segment (when it holds rows) and start a new one; returns every sealed segment, oldest first (the
   * spool's own list, which `remove` takes from). While the disk refuses, what waits for it becomes a memory segment
   * instead, and the open file stays open.
   */
  seal(): readonly Segment[] {
    this.#writeOut();
    if (this.#file.unwritten !== null) this.#spill();
    const old = this.#file;
    if (old.seg.rows > 0 && !this.#closed && this.#failure === null) {
      let file: OpenFile;
      try {
        file = new OpenFile(this.#newSegment());
      } catch (err) {
        this.#failure = err; // the disk refuses: keep writing to the open segment
        this.#retryLater();
        return this.#sealed;
      }
      try {
        old.sync();
      } catch (err) {
        file.close();
        rmSync(file.seg.path, { force: true });
        this.#failure = err; // the disk refuses: keep writing to the open segment
        this.#retryLater();
        return this.#sealed;
      }
      old.close();
      if (old.lines !== null) old.seg.lines = old.lines;
      this.#sealed.push(old.seg);
      // A backlog (the store down, or slower than the rows come) stays on disk: only the newest segments keep lines.
      for (let i = 0; i < this.#sealed.length - KEEP_LINES; i++) delete this.#sealed[i]!.lines;
      this.#file = file;
      // The newest segment holds a marker for every request in flight, with what is known of it now.
      for (const snapshot of this.#inFlight.values()) this.#mark(snapshot());
      this.#writeOut();
    }
    return this.#sealed;
  }
  /** A sealed segment's whole row lines as they are (no markers), and their columns, for an insert that does not parse them. */
  readLines(seg: Segment): RowLines {
    return seg.lines === undefined ? rowLines(this.#text(seg), this.#own(seg)) : { columns: this.#opts.columns, lines: seg.lines };
  }

  #text = (seg: Segment): string => seg.memory?.toString('utf8') ?? readFileSync(seg.path, 'utf8');
  /** A memory segment never left this process: its rows are in this spool's columns, header or not. */
  #own = (seg: Segment): readonly string[] | null => (seg.memory === undefined ? null : this.#opts.columns);

  /** The store acknowledged every row of `seg`: delete it. A file the disk keeps stays in `bytes` until a later remove deletes it. */
  remove(seg: Segment): void {
    const i = this.#sealed.indexOf(seg);
    if (i !== -1) this.#undeleted.push(...this.#sealed.splice(i, 1));
    for (const s of this.#undeleted.splice(0)) {
      try {
        if (s.memory === undefined) rmSync(s.path, { force: true });
        this.#bytes -= s.bytes;
      } catch {
        this.#undeleted.push(s);
      }
    }
  }

  /** Rows ClickHouse refused as data: kept beside the spool (rejected.jsonl, with the reason) for a person to look at. */
  reject(rows: readonly Row[], err: unknown): void {
    appendFileSync(join(this.#opts.dir, 'rejected.jsonl'), rejectedLines(rows, err));
  }

  /** Write and fsync what is buffered and close the file; an empty open segment is removed. */
  close(): void {
    if (this.#closed) return;
    this.#writeOut();
    this.#closed = true;
    clearInterval(this.#commitTimer);
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#file.syncAndClose(); // what did not reach the file (a full or read-only disk) is lost with the process
    // Markers of requests still in flight (a close without draining) keep the file: they become interrupted rows.
    if (this.#file.seg.rows === 0 && this.#inFlight.size === 0) rmSync(this.#file.seg.path, { force: true });
  }

  #newSegment = (): Segment => newSegment(this.#opts.dir, this.#instance, ++this.#seq);
}
