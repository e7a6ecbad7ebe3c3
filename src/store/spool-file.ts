// The spool's open segment file (src/store/spool.ts): its descriptor, whether its header went to it, the row lines it
// holds whole (kept for its insert), and what of it has not reached the disk. A disk that refuses a write (full,
// read-only, failing) may take part of it: what did not reach the file waits here from the first byte of the line the
// disk cut, and that line's part in the file is ended with `!` once the line goes elsewhere whole, so it can never
// parse and no row is both in the file and elsewhere.

import { appendFileSync, closeSync, fsync, fsyncSync, openSync, writeSync } from 'node:fs';
import type { Segment } from './segment.js';

/** What a write did: nothing waited, or everything reached the file, or the disk refused (what it did not take waits). */
export type Wrote = 'nothing' | 'written' | { readonly refused: unknown };

export class OpenFile {
  readonly seg: Segment;
  readonly fd: number;
  /** Its header is in the file, or waiting or queued for it. */
  headed = false;
  /** Row lines (no newline) written whole to the file; null once the disk refused a write into it, or rows came to it another way. */
  lines: string[] | null = [];
  /** Written since its last fsync. */
  dirty = false;
  /** Bytes that have not reached the file, oldest first, from a line's first byte; the first `#torn` are in the file. */
  unwritten: Buffer | null = null;
  #torn = 0;
  /** `!\n` still to be written to the file, ending a line cut there whose row went elsewhere whole. */
  #poison: Buffer | null = null;

  /** Open (create) `seg`'s file for appending; throws when the disk refuses. */
  constructor(seg: Segment) {
    this.fd = openSync(seg.path, 'a');
    this.seg = seg;
  }

  /** `buf` goes after what waits, at the next `write`. */
  queue(buf: Buffer): void {
    this.unwritten = this.unwritten === null ? buf : Buffer.concat([this.unwritten, buf]);
  }

  /** Write what waits (a cut line's end first); `written`, the row lines in it, are kept once it all reached the file. */
  write(written: readonly string[] | null): Wrote {
    const buf = this.unwritten;
    if (buf === null && this.#poison === null) return 'nothing';
    let off = this.#torn;
    try {
      while (this.#poison !== null) {
        const n = writeSync(this.fd, this.#poison);
        this.#poison = n >= this.#poison.length ? null : this.#poison.subarray(n);
      }
      if (buf !== null) while (off < buf.length) off += writeSync(this.fd, buf, off);
      if (this.lines !== null && written !== null) for (const l of written) this.lines.push(l);
      this.unwritten = null;
      this.#torn = 0;
      this.dirty = true;
      return 'written';
    } catch (err) {
      // What did not reach the file waits, from the start of the line the disk cut (bounded by the spool's maxBytes).
      this.lines = null;
      if (buf !== null && off > this.#torn) {
        const lineStart = buf.lastIndexOf(0x0a, off - 1) + 1;
        this.unwritten = buf.subarray(lineStart);
        this.#torn = off - lineStart;
      }
      return { refused: err };
    }
  }

  /**
   * The line the disk cut goes elsewhere whole (what waits keeps it from its first byte): its part in the file is to
   * be ended with `!\n`. Returns the bytes that adds to the file (its cut part counts there until the file is deleted).
   */
  endCutLine(): number {
    if (this.#torn === 0) return 0;
    this.#poison = Buffer.from('!\n');
    const added = this.#torn + this.#poison.length;
    this.#torn = 0;
    return added;
  }

  /** Write a cut line's end through the file's path (its descriptor's disk may be gone); throws when the disk refuses. */
  endCutLineByPath(): void {
    if (this.#poison === null) return;
    appendFileSync(this.seg.path, this.#poison);
    this.#poison = null;
  }

  /** What waits for the disk, taken (from a line's start: end a cut line first). */
  take(): Buffer | null {
    const moved = this.unwritten;
    this.unwritten = null;
    return moved;
  }

  /** fsync in the background when written since the last one. */
  commit(): void {
    if (!this.dirty) return;
    this.dirty = false;
    fsync(this.fd, () => undefined);
  }

  /** fsync now (throws when the disk refuses). */
  sync(): void {
    fsyncSync(this.fd);
  }

  /** Close the descriptor (after `sync`, or `syncAndClose`). */
  close(): void {
    closeSync(this.fd);
  }

  /** fsync what reached the file, when the disk lets it, and close the descriptor. */
  syncAndClose(): void {
    try {
      fsyncSync(this.fd);
    } catch {} // a full or read-only disk: what reached the file is there; the file is read back by path
    closeSync(this.fd);
  }
}
