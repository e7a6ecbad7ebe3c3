// The spool (DESIGN.md decision 2): every finished row is appended to a segment file under `<data_dir>/spool` as soon
// as it exists, one write(2) per event-loop turn for the rows of that turn, so a killed process loses nothing that
// reached the OS; the file is fsync'ed every `commit_ms`, so a machine crash loses at most that window. The batch
// writer inserts the sealed segments in order (an earlier process's first), deleting each once ClickHouse took it.
//
// Requests in flight: when a request begins, a begin marker (`{"$begin": <its row as it would be now>}`) is written
// too, and each seal copies the markers of requests still in flight, refreshed (the usage known so far), into the new
// segment, so the newest segment always holds a marker for every request in flight. A marker whose request has no
// row in any segment left at the next start is a request the process died in the middle of: it becomes a row with
// status `interrupted` (the snapshot's status) and goes to the store like any other.
//
// A disk that refuses writes (full, read-only, failing): what it refused waits in memory, and at the next seal it
// becomes a memory segment, inserted and acknowledged like any other, so the rows still reach a store that works (the
// server path, or a close that drains). Only a process that dies meanwhile loses them: they never reached a disk. A
// line the disk took only part of goes to memory whole, and the part in the file is ended with `!` so it can never
// parse. The write is tried again every 250 ms, each time in a new segment file (a remounted disk is reached by path,
// not through the old descriptor); the first that succeeds clears the failure.
//
// The newest segments also keep in memory the lines of the rows written whole to their file (KEEP_LINES), so the
// insert does not read back on the event loop what was written a second before (12-20 ms for a 3 MB segment here).
// A segment the disk refused a write into, an earlier process's, and a backlog's older ones are read from disk.

import { appendFileSync, closeSync, fsync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { countRows, leftSegments, newSegment, markerLine, rejectedLines, rowLines, rowsOf, type Segment } from './segment.js';

export interface SpoolOptions {
  /** The spool directory (created when missing). */
  readonly dir: string;
  /** fsync the open segment this often (ms). */
  readonly commitMs: number;
  /** Bytes on disk past which new rows are refused (and counted as dropped by the caller). */
  readonly maxBytes: number;
}

/** How rows and in-flight markers are matched: the id a row carries. */
export type RowId<Row> = (row: Row) => string;

/** How soon a write the disk refused is tried again. */
const RETRY_WRITE_MS = 250;

/** How many of the newest sealed segments keep their row lines in memory for their insert (older: read from disk). */
const KEEP_LINES = 2;

/** What the batch writer needs of a spool: this one on disk, or (benchmarks only, to measure it) one in memory. */
export type SpoolPort<Row> = Pick<
  Spool<Row>,
  'leftovers' | 'rows' | 'bytes' | 'oldest' | 'openRows' | 'inFlight' | 'failure' | 'append' | 'begin' | 'seal' | 'read' | 'readLines' | 'remove' | 'reject' | 'close'
>;

export class Spool<Row> {
  readonly #opts: SpoolOptions;
  readonly #idOf: RowId<Row>;
  /** Requests in flight: their id and how to snapshot their row now. */
  readonly #inFlight = new Map<string, () => Row>();
  /** Rows of requests an earlier process died in the middle of, found at open. */
  readonly #interrupted: number;
  readonly #instance = randomBytes(4).toString('hex');
  #seq = 0;
  #fd: number;
  #open: Segment;
  /** Closed segments waiting for the store, oldest first. */
  readonly #sealed: Segment[] = [];
  #pending: string[] = [];
  #pendingRows = 0;
  /** Row lines (no newline): of the rows in `#pending`; then of the rows written whole to the open segment's file. */
  #pendingLines: string[] = [];
  #openLines: string[] | null = []; // null once the disk refused a write into it, or rows came to it another way
  #scheduled = false;
  #dirty = false;
  #bytes = 0;
  #closed = false;
  /**
   * Appended lines that have not reached the file (the disk refused them), oldest first. It starts at a line's first
   * byte; the first `#tornBytes` of it are in the file already (a write the disk took only part of).
   */
  #unwritten: Buffer | null = null;
  #tornBytes = 0;
  /** `!\n` still to be written to the open file, ending a line cut there whose row went elsewhere whole. */
  #poison: Buffer | null = null;
  #failure: unknown = null;
  #retry: NodeJS.Timeout | null = null;
  readonly #commitTimer: NodeJS.Timeout;

  /**
   * Open the spool in `opts.dir`; segments found there (an earlier process's) are sealed, oldest first, and the
   * requests that process left in flight are written at once as `interrupted` rows into the new open segment.
   */
  constructor(opts: SpoolOptions, idOf: RowId<Row>) {
    this.#opts = opts;
    this.#idOf = idOf;
    mkdirSync(opts.dir, { recursive: true });
    const left = leftSegments<Row>(opts.dir, idOf);
    this.#sealed.push(...left.segments);
    this.#bytes = left.bytes;
    this.#open = this.#newSegment();
    this.#fd = openSync(this.#open.path, 'a');
    for (const row of left.interrupted) {
      const json = JSON.stringify(row);
      this.#pending.push(`${json}\n`);
      this.#pendingLines.push(json);
      this.#pendingRows++;
    }
    this.#interrupted = left.interrupted.length;
    this.#writeOut();
    this.#commitTimer = setInterval(() => this.#commit(), opts.commitMs);
    this.#commitTimer.unref();
  }

  /** Segments (and rows) that an earlier process left, found at open. */
  readonly leftovers = (): { segments: number; rows: number; interrupted: number } =>
    ({ segments: this.#sealed.length, rows: this.#sealed.reduce((n, s) => n + s.rows, 0), interrupted: this.#interrupted });

  /** Rows spooled and not yet deleted (written to the store), the open segment's included. */
  get rows(): number {
    return this.#sealed.reduce((n, s) => n + s.rows, 0) + this.#open.rows + this.#pendingRows;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Creation time of the oldest segment holding rows, or null when the spool is empty. */
  get oldest(): number | null {
    if (this.#sealed.length > 0) return this.#sealed[0]!.createdAt;
    return this.#open.rows + this.#pendingRows > 0 ? this.#open.createdAt : null;
  }

  /** Rows in the open segment (not yet sealed), the ones still in this turn's buffer included. */
  get openRows(): number {
    return this.#open.rows + this.#pendingRows;
  }

  /** Append a row (it ends its request, if one is in flight); false (nothing written) when full or closed. */
  append(row: Row): boolean {
    if (this.#closed) return false;
    this.#inFlight.delete(this.#idOf(row));
    const json = JSON.stringify(row);
    const line = `${json}\n`;
    if (this.#bytes + line.length > this.#opts.maxBytes) return false;
    this.#pending.push(line);
    this.#pendingLines.push(json);
    this.#pendingRows++;
    this.#bytes += line.length;
    this.#scheduleWrite();
    return true;
  }

  /** A request began: write its marker now and keep it (refreshed) in every new segment until its row comes. */
  begin(id: string, snapshot: () => Row): void {
    if (this.#closed) return;
    this.#inFlight.set(id, snapshot);
    this.#mark(snapshot());
    this.#scheduleWrite();
  }

  /** Requests begun and not yet ended. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  #mark(row: Row): void {
    const line = markerLine(row);
    if (this.#bytes + line.length > this.#opts.maxBytes) return; // full: the row itself will be counted when it comes
    this.#pending.push(line);
    this.#bytes += line.length;
  }

  #scheduleWrite(): void {
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#writeOut());
    }
  }

  /** One write(2) for every row appended in this turn. */
  #writeOut(): void {
    this.#scheduled = false;
    let written: string[] | null = null;
    if (this.#pending.length > 0) {
      const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
      const buf = Buffer.from(text);
      // A string's length counts UTF-16 units; the file counts bytes.
      this.#bytes += buf.length - text.length;
      this.#open.rows += this.#pendingRows;
      this.#open.bytes += buf.length;
      this.#pending = [];
      this.#pendingRows = 0;
      written = this.#pendingLines;
      this.#pendingLines = [];
      this.#unwritten = this.#unwritten === null ? buf : Buffer.concat([this.#unwritten, buf]);
    }
    const buf = this.#unwritten;
    if (buf === null && this.#poison === null) return;
    let off = this.#tornBytes;
    try {
      while (this.#poison !== null) {
        const n = writeSync(this.#fd, this.#poison);
        this.#poison = n >= this.#poison.length ? null : this.#poison.subarray(n);
      }
      if (buf !== null) while (off < buf.length) off += writeSync(this.#fd, buf, off);
      if (this.#openLines !== null && written !== null) for (const l of written) this.#openLines.push(l);
      this.#unwritten = null;
      this.#tornBytes = 0;
      this.#failure = null;
      this.#dirty = true;
    } catch (err) {
      // A full or read-only disk: what did not reach the file waits here (bounded by maxBytes, counted in `bytes`),
      // from the start of the line the disk cut, and is tried again; the next seal moves it to a memory segment.
      this.#openLines = null;
      if (buf !== null && off > this.#tornBytes) {
        const lineStart = buf.lastIndexOf(0x0a, off - 1) + 1;
        this.#unwritten = buf.subarray(lineStart);
        this.#tornBytes = off - lineStart;
      }
      this.#failure = err;
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
    const next = this.#newSegment();
    let fd: number;
    try {
      fd = openSync(next.path, 'a');
    } catch (err) {
      this.#failure = err;
      return false;
    }
    if (this.#tornBytes > 0) this.#endCutLine();
    if (this.#poison !== null) {
      try {
        appendFileSync(this.#open.path, this.#poison);
        this.#poison = null;
      } catch (err) {
        closeSync(fd);
        rmSync(next.path, { force: true });
        this.#failure = err;
        return false;
      }
    }
    try {
      fsyncSync(this.#fd);
    } catch {} // the old descriptor's disk is gone; the old file is read back by path
    closeSync(this.#fd);
    if (this.#unwritten !== null) {
      const moved = this.#unwritten;
      const rows = countRows(moved);
      this.#open.rows -= rows;
      this.#open.bytes -= moved.length;
      next.rows += rows;
      next.bytes += moved.length;
    }
    if (this.#open.rows > 0) this.#sealed.push(this.#open);
    else {
      this.#bytes -= this.#open.bytes;
      rmSync(this.#open.path, { force: true });
    }
    this.#open = next;
    this.#fd = fd;
    this.#dirty = false;
    this.#openLines = null; // what waited for the disk goes to this file: read from it
    this.#failure = null; // the disk took a new file; the write that follows says whether it takes data
    for (const snapshot of this.#inFlight.values()) this.#mark(snapshot());
    return true;
  }

  /**
   * The line the disk cut in the open file goes elsewhere whole (`#unwritten` keeps it from its first byte): the part
   * in the file is ended with `!\n`, which can never parse, so no row is both there and elsewhere.
   */
  #endCutLine(): void {
    this.#poison = Buffer.from('!\n');
    // The cut part counts in the file and in `#unwritten` until the file is deleted.
    this.#bytes += this.#tornBytes + this.#poison.length;
    this.#open.bytes += this.#tornBytes + this.#poison.length;
    this.#tornBytes = 0;
  }

  /** The disk refuses: what waits for it becomes a memory segment, which the writer inserts like any other. */
  #spill(): void {
    if (this.#tornBytes > 0) this.#endCutLine();
    const moved = Buffer.from(this.#unwritten!); // a copy: it may be a view of a larger buffer
    const rows = countRows(moved);
    this.#open.rows -= rows;
    this.#open.bytes -= moved.length;
    this.#sealed.push({ ...this.#newSegment(), path: '', rows, bytes: moved.length, memory: moved });
    this.#unwritten = null;
  }

  /** Why the spool cannot write to its directory now (a full or read-only disk), or null while it can. */
  get failure(): unknown {
    return this.#failure;
  }

  #commit(): void {
    if (!this.#dirty || this.#closed) return;
    this.#dirty = false;
    fsync(this.#fd, () => undefined);
  }

  /**
   * Close the open segment (when it holds rows) and start a new one; returns every sealed segment, oldest first (the
   * spool's own list, which `remove` takes from). While the disk refuses, what waits for it becomes a memory segment
   * instead, and the open file stays open.
   */
  seal(): readonly Segment[] {
    this.#writeOut();
    if (this.#unwritten !== null) this.#spill();
    if (this.#open.rows > 0 && !this.#closed && this.#failure === null) {
      const next = this.#newSegment();
      let fd: number;
      try {
        fd = openSync(next.path, 'a');
        fsyncSync(this.#fd);
      } catch (err) {
        this.#failure = err; // the disk refuses: keep writing to the open segment
        this.#retryLater();
        return this.#sealed;
      }
      closeSync(this.#fd);
      if (this.#openLines !== null) this.#open.lines = this.#openLines;
      this.#sealed.push(this.#open);
      // A backlog (the store down, or slower than the rows come) stays on disk: only the newest segments keep lines.
      for (let i = 0; i < this.#sealed.length - KEEP_LINES; i++) delete this.#sealed[i]!.lines;
      this.#open = next;
      this.#fd = fd;
      this.#dirty = false;
      this.#openLines = [];
      // The newest segment holds a marker for every request in flight, with what is known of it now.
      for (const snapshot of this.#inFlight.values()) this.#mark(snapshot());
      this.#writeOut();
    }
    return this.#sealed;
  }

  /** The rows of a sealed segment, read back from disk or memory (markers and a torn line are skipped). */
  read(seg: Segment): Row[] {
    return rowsOf<Row>(this.#text(seg));
  }

  /** A sealed segment's whole row lines as they are (no markers), for an insert that does not parse them. */
  readLines(seg: Segment): readonly string[] {
    return seg.lines ?? rowLines(this.#text(seg));
  }

  #text = (seg: Segment): string => seg.memory?.toString('utf8') ?? readFileSync(seg.path, 'utf8');

  /** The store acknowledged every row of `seg`: delete it. */
  remove(seg: Segment): void {
    const i = this.#sealed.indexOf(seg);
    if (i === -1) return;
    this.#sealed.splice(i, 1);
    if (seg.memory === undefined) rmSync(seg.path, { force: true });
    this.#bytes -= seg.bytes;
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
    try {
      fsyncSync(this.#fd);
    } catch {
      // a full or read-only disk: what reached the file is there; what did not is lost with the process
    }
    closeSync(this.#fd);
    // Markers of requests still in flight (a close without draining) keep the file: they become interrupted rows.
    if (this.#open.rows === 0 && this.#inFlight.size === 0) rmSync(this.#open.path, { force: true });
  }

  #newSegment = (): Segment => newSegment(this.#opts.dir, this.#instance, ++this.#seq);
}
