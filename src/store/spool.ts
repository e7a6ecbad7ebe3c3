// The spool (DESIGN.md decision 2): every finished row is appended to a segment file under `<data_dir>/spool` as soon
// as it exists, one write(2) per event-loop turn for the rows of that turn, so a killed process loses nothing that
// reached the OS; the file is fsync'ed every `commit_ms`, so a machine crash loses at most that window. The batch
// writer seals the open segment, inserts the sealed segments into ClickHouse in order and deletes each one only when
// ClickHouse acknowledged all of it. Segments left by an earlier process are found at open and go first.
//
// A segment is JSON lines, one row a line. A process killed in the middle of a write can leave a torn last line;
// reading skips a line that does not parse (it never reached the OS whole, so it was never acknowledged as written).
// Segment names sort by creation time and carry a random instance id, so a name is unique and stable: it is the
// insert deduplication token of its rows, the same on every retry and every replay.

import { appendFileSync, closeSync, fsync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export interface SpoolOptions {
  /** The spool directory (created when missing). */
  readonly dir: string;
  /** fsync the open segment this often (ms). */
  readonly commitMs: number;
  /** Bytes on disk past which new rows are refused (and counted as dropped by the caller). */
  readonly maxBytes: number;
}

export interface Segment {
  readonly name: string;
  readonly path: string;
  rows: number;
  bytes: number;
  /** Creation time (ms), from the name. */
  readonly createdAt: number;
}

const EXT = '.jsonl';
const NAME = /^(\d{13})-[0-9a-f]{8}-(\d{6})\.jsonl$/;

export class Spool<Row> {
  readonly #opts: SpoolOptions;
  readonly #instance = randomBytes(4).toString('hex');
  #seq = 0;
  #fd: number;
  #open: Segment;
  /** Closed segments waiting for the store, oldest first. */
  readonly #sealed: Segment[] = [];
  #pending: string[] = [];
  #pendingRows = 0;
  #scheduled = false;
  #dirty = false;
  #bytes = 0;
  #closed = false;
  readonly #commitTimer: NodeJS.Timeout;

  /** Open the spool in `opts.dir`; segments found there (an earlier process's) are sealed, oldest first. */
  constructor(opts: SpoolOptions) {
    this.#opts = opts;
    mkdirSync(opts.dir, { recursive: true });
    for (const file of readdirSync(opts.dir).filter((f) => NAME.test(f)).sort()) {
      const path = join(opts.dir, file);
      const bytes = statSync(path).size;
      if (bytes === 0) {
        rmSync(path, { force: true });
        continue;
      }
      this.#sealed.push({ name: file.slice(0, -EXT.length), path, rows: countLines(path), bytes, createdAt: Number(NAME.exec(file)![1]) });
      this.#bytes += bytes;
    }
    this.#open = this.#newSegment();
    this.#fd = openSync(this.#open.path, 'a');
    this.#commitTimer = setInterval(() => this.#commit(), opts.commitMs);
    this.#commitTimer.unref();
  }

  /** Segments (and rows) that an earlier process left, found at open. */
  readonly leftovers = (): { segments: number; rows: number } => ({
    segments: this.#sealed.length,
    rows: this.#sealed.reduce((n, s) => n + s.rows, 0),
  });

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

  /** Append a row; false (nothing written) when the spool is at `maxBytes` or closed. */
  append(row: Row): boolean {
    if (this.#closed) return false;
    const line = `${JSON.stringify(row)}\n`;
    if (this.#bytes + line.length > this.#opts.maxBytes) return false;
    this.#pending.push(line);
    this.#pendingRows++;
    this.#bytes += line.length;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#writeOut());
    }
    return true;
  }

  /** One write(2) for every row appended in this turn. */
  #writeOut(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
    const n = this.#pendingRows;
    this.#pending = [];
    this.#pendingRows = 0;
    const buf = Buffer.from(text);
    // A string's length counts UTF-16 units; the file counts bytes.
    this.#bytes += buf.length - text.length;
    writeSync(this.#fd, buf);
    this.#open.rows += n;
    this.#open.bytes += buf.length;
    this.#dirty = true;
  }

  #commit(): void {
    if (!this.#dirty || this.#closed) return;
    this.#dirty = false;
    fsync(this.#fd, () => undefined);
  }

  /** Close the open segment (when it holds rows) and start a new one; returns every sealed segment, oldest first. */
  seal(): readonly Segment[] {
    this.#writeOut();
    if (this.#open.rows > 0 && !this.#closed) {
      fsyncSync(this.#fd);
      closeSync(this.#fd);
      this.#sealed.push(this.#open);
      this.#open = this.#newSegment();
      this.#fd = openSync(this.#open.path, 'a');
      this.#dirty = false;
    }
    return this.#sealed;
  }

  /** The rows of a sealed segment, read back from disk (a torn last line is skipped). */
  read(seg: Segment): Row[] {
    const rows: Row[] = [];
    for (const line of readFileSync(seg.path, 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        rows.push(JSON.parse(line) as Row);
      } catch {
        // a line cut by a kill in the middle of its write: never acknowledged as written
      }
    }
    return rows;
  }

  /** The store acknowledged every row of `seg`: delete it. */
  remove(seg: Segment): void {
    const i = this.#sealed.indexOf(seg);
    if (i === -1) return;
    this.#sealed.splice(i, 1);
    rmSync(seg.path, { force: true });
    this.#bytes -= seg.bytes;
  }

  /** Rows ClickHouse refused as data: kept beside the spool (rejected.jsonl, with the reason) for a person to look at. */
  reject(rows: readonly Row[], err: unknown): void {
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 500);
    appendFileSync(join(this.#opts.dir, 'rejected.jsonl'), rows.map((row) => `${JSON.stringify({ reason, row })}\n`).join(''));
  }

  /** Write and fsync what is buffered and close the file; an empty open segment is removed. */
  close(): void {
    if (this.#closed) return;
    this.#writeOut();
    this.#closed = true;
    clearInterval(this.#commitTimer);
    fsyncSync(this.#fd);
    closeSync(this.#fd);
    if (this.#open.rows === 0) rmSync(this.#open.path, { force: true });
  }

  #newSegment(): Segment {
    const createdAt = Date.now();
    const name = `${String(createdAt).padStart(13, '0')}-${this.#instance}-${String(++this.#seq % 1_000_000).padStart(6, '0')}`;
    return { name, path: join(this.#opts.dir, name + EXT), rows: 0, bytes: 0, createdAt };
  }
}

function countLines(path: string): number {
  const buf = readFileSync(path);
  let n = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
  return n;
}
