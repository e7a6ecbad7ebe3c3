// Server-sent events, layer one and two: bytes -> frames. A frame is what lies between blank lines; its `data`
// lines are joined with '\n'. Comments (lines starting with ':', such as an upstream's keep-alives while a model
// thinks) are not frames: dropped, or kept for a relay to forward (`comments: true`). Works on any chunking of the bytes.

import { StringDecoder } from 'node:string_decoder';
import { TollgateError } from '../core/errors.js';

/** The longest frame taken (characters): an upstream that sends more before a blank line is refused, not buffered. */
export const MAX_FRAME_CHARS = 16 * 1024 * 1024;

export interface SseFrame {
  readonly event: string | null;
  readonly data: string;
  readonly id: string | null;
}

/**
 * One block of an event stream as it came: its text, the blank line that ended it included (the final block may lack
 * one), and the frame it dispatches (null for a block of comments, `retry:` or nothing else).
 */
export interface SseBlock {
  readonly raw: string;
  readonly frame: SseFrame | null;
}

export class SseParser {
  // Node's StringDecoder, not TextDecoder: on Node 20 TextDecoder goes through ICU (to UTF-16, then copied again to
  // one-byte text), about twice the cost of a chunk's decoding and parsing (docs/benchmarks.md).
  readonly #decoder = new StringDecoder('utf8');
  /** Whether text has come yet: a UTF-8 byte order mark before the first text is dropped, as TextDecoder did. */
  #started = false;
  #buf = '';
  /**
   * Where the next search for a frame end starts in #buf: the text before it ends no frame (it was looked through),
   * less the three characters a blank line may have begun with. A frame in many chunks costs its length once.
   */
  #resume = 0;
  /** The text's last three characters: with the next chunk's text, where a blank line split between chunks shows. */
  #tail = '';
  /** The comment lines read and not yet taken (null: comments are dropped). */
  readonly #comments: string[] | null;

  constructor(opts: { comments?: boolean } = {}) {
    this.#comments = opts.comments === true ? [] : null;
  }

  /** The comments read since the last call, as one SSE comment block ('' when none): what a relay forwards. */
  takeComments(): string {
    if (this.#comments === null || this.#comments.length === 0) return '';
    const block = `${this.#comments.join('\n')}\n\n`;
    this.#comments.length = 0;
    return block;
  }

  /**
   * Feed bytes; returns the frames completed by them. Text that ends no frame is only appended: the buffer is looked
   * through again only once a blank line has come, so a frame in many chunks costs its length once, not once a chunk.
   * A frame longer than MAX_FRAME_CHARS is refused (TOLLGATE_ERR_UPSTREAM_PROTOCOL).
   */
  push(chunk: Uint8Array): SseFrame[] {
    const frames: SseFrame[] = [];
    this.#read(chunk, frames, null);
    return frames;
  }

  /** End of input: a final frame without its blank line still counts. */
  end(): SseFrame[] {
    const frames: SseFrame[] = [];
    this.#read(null, frames, null);
    return frames;
  }

  /**
   * For a relay that forwards the stream's text as it came: every block the bytes complete (`chunk` null: the end of
   * input, when the text after the last blank line, whitespace too, is the final block), its text with its frame (the
   * same one parse as push; comments stay in their block's text, not collected).
   */
  blocks(chunk: Uint8Array | null): SseBlock[] {
    const blocks: SseBlock[] = [];
    this.#read(chunk, null, blocks);
    return blocks;
  }

  /** Read `chunk` (null: the end of input) into `frames` or `blocks`. */
  #read(chunk: Uint8Array | null, frames: SseFrame[] | null, blocks: SseBlock[] | null): void {
    if (chunk === null) {
      this.#text(this.#decoder.end());
      this.#drain(true, frames, blocks);
      return;
    }
    const text = this.#decoder.write(chunk);
    this.#text(text);
    // The new text alone (and the few characters before it) says whether a frame ended: the buffer, a long frame's
    // many chunks joined, is not touched (nor flattened) until one has.
    // The text and the seam are looked at apart: the two joined would copy each chunk once more.
    const ends = hasBlankLine(text) || (this.#tail !== '' && hasBlankLine(this.#tail + text.slice(0, 3)));
    this.#tail = text.length >= 3 ? text.slice(-3) : (this.#tail + text).slice(-3);
    if (ends) this.#drain(false, frames, blocks);
    if (this.#buf.length > MAX_FRAME_CHARS) throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream provider sent an event stream frame longer than ${MAX_FRAME_CHARS / 1024 / 1024} MiB`);
  }

  #text(text: string): void {
    if (!this.#started && text !== '') {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    this.#buf += text;
  }

  /** Cut the buffer's whole frames into `frames` (parsed) or `blocks` (with their text); `final`: the rest too. */
  #drain(final: boolean, frames: SseFrame[] | null, blocks: SseBlock[] | null): void {
    const buf = this.#buf;
    const comments = blocks === null ? this.#comments : null;
    let from = 0;
    let search = Math.min(this.#resume, buf.length);
    // Providers end lines with \n: the \r forms are looked for only when the text not yet looked through has a \r.
    const cr = buf.indexOf('\r', search) !== -1;
    for (;;) {
      const end = frameEnd(buf, search, cr);
      if (end === -1) break;
      const f = parseFrame(buf.slice(from, end.index), comments);
      if (blocks !== null) blocks.push({ raw: buf.slice(from, end.next), frame: f });
      else if (f) frames!.push(f);
      from = search = end.next;
    }
    this.#buf = from === 0 ? buf : buf.slice(from);
    this.#resume = Math.max(0, this.#buf.length - 3);
    if (final && (blocks !== null ? this.#buf !== '' : this.#buf.trim() !== '')) {
      const f = this.#buf.trim() === '' ? null : parseFrame(this.#buf, comments);
      if (blocks !== null) blocks.push({ raw: this.#buf, frame: f });
      else if (f) frames!.push(f);
      this.#buf = '';
      this.#resume = 0;
      this.#tail = '';
    }
  }
}

/**
 * A blank line: a line end (`\r\n`, `\n`, or a `\r` not followed by `\n`) and then another, the second of any kind:
 * `\n\n`, `\r\n\r\n`, `\r\r`, and the mixed ones (`\n\r\n`, `\r\n\n`, `\n\r`, `\r\n\r`), as the SSE format's `cr lf
 * / cr / lf` line ends allow. One search from where the last one ended: linear in the text, where an indexOf for each
 * form over the rest of the buffer, for each frame, grew with the buffer (a CRLF stream in many chunks).
 */
const BLANK_LINE = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)/g;

/** Whether `s` holds a blank line. */
function hasBlankLine(s: string): boolean {
  if (s.indexOf('\n\n') !== -1) return true;
  if (s.indexOf('\r') === -1) return false;
  BLANK_LINE.lastIndex = 0;
  return BLANK_LINE.test(s);
}

/** Where the first frame ends at or after `from` (its blank line), or -1; `cr`: the text may hold a \r. */
function frameEnd(buf: string, from: number, cr: boolean): { index: number; next: number } | -1 {
  if (!cr) {
    const lf = buf.indexOf('\n\n', from);
    return lf === -1 ? -1 : { index: lf, next: lf + 2 };
  }
  BLANK_LINE.lastIndex = from;
  const m = BLANK_LINE.exec(buf);
  if (m === null || heldCr(buf, m.index + m[0].length, buf.length)) return -1;
  return { index: m.index, next: m.index + m[0].length };
}

function parseFrame(raw: string, comments: string[] | null): SseFrame | null {
  // The common frame: one `data: ` line (no other field, no comment, no line break).
  if (raw.startsWith('data: ') && raw.indexOf('\n') === -1 && raw.indexOf('\r') === -1) return { event: null, data: raw.slice(6), id: null };
  let event: string | null = null;
  let id: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(/\r\n|\n|\r/)) {
    if (line === '') continue;
    if (line.startsWith(':')) {
      comments?.push(line);
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
  }
  if (data.length === 0 && event === null) return null;
  return { event, data: data.join('\n'), id };
}

// SseParser's frame ends (BLANK_LINE), mixed ones included.
const SEPARATORS = ['\n\n', '\r\n\r\n', '\r\r', '\r\n\n', '\n\r\n', '\n\r', '\r\n\r'].map((x) => Buffer.from(x));

/** Where the last blank line in `b` ends (its bytes after the separator), or -1. */
function lastFrameEnd(b: Buffer, dataEnd = b.length): number {
  let end = -1;
  for (const sep of SEPARATORS) {
    let i = b.lastIndexOf(sep);
    // One that ends the data so far in `\n\r` is held: a `\n` may follow, which ends the blank line (heldCr).
    if (i !== -1 && heldCr(b, i + sep.length, dataEnd)) i = i === 0 ? -1 : b.lastIndexOf(sep, i - 1);
    if (i !== -1 && i + sep.length > end) end = i + sep.length;
    if (sep === SEPARATORS[0] && b.indexOf(13) === -1) break; // no \r: only the \n form can be there
  }
  return end;
}

/**
 * A blank line that ends at the end of the data so far with a `\r` right after a `\n` (`\r\n\r`, `\n\r`) is not taken
 * yet: most likely the `\r\n` of a CRLF stream split between reads, whose `\n` belongs to it. (`\r\r` is taken.)
 */
function heldCr(b: { readonly length: number; at(i: number): unknown }, end: number, dataEnd: number): boolean {
  return end === dataEnd && end >= 2 && isCr(b.at(end - 1)) && isLf(b.at(end - 2));
}
const isCr = (c: unknown): boolean => c === 13 || c === '\r';
const isLf = (c: unknown): boolean => c === 10 || c === '\n';

/**
 * An event stream's bytes cut at frame ends, for a relay that forwards them as they are: `push` gives what ends with a
 * whole frame (null when the chunk ends none), and keeps the unfinished frame's bytes for later, so a stream that
 * breaks off mid-frame leaves the client on a frame boundary, where a terminal error can follow. Each byte is copied
 * at most once (a frame in many chunks is joined when it ends); what is kept is bounded by SseParser's frame limit.
 */
export class WholeFrames {
  #held: Buffer[] = [];
  /** The held bytes' last three (a blank line can span at most four bytes, so three of them held at most). */
  #tail: Buffer = Buffer.alloc(0);

  push(chunk: Uint8Array): Buffer | null {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let end = lastFrameEnd(b);
    if (end === -1 && this.#tail.length > 0) {
      // a blank line across the seam (over several small chunks, too): the held bytes' last three and this chunk's first
      const seam = Buffer.concat([this.#tail, b.subarray(0, 3)]);
      const across = lastFrameEnd(seam, b.length <= 3 ? seam.length : seam.length + 1);
      if (across > this.#tail.length) end = across - this.#tail.length;
    }
    if (end === -1) {
      this.#held.push(b);
      this.#tail = lastThree(this.#tail, b);
      return null;
    }
    const out = this.#held.length === 0 ? b.subarray(0, end) : Buffer.concat([...this.#held, b.subarray(0, end)]);
    const rest = b.subarray(end);
    this.#held = rest.length > 0 ? [rest] : [];
    this.#tail = lastThree(Buffer.alloc(0), rest);
    return out;
  }

  /** The bytes after the last frame end (a final frame without its blank line, or a cut one). */
  rest(): Buffer {
    const rest = Buffer.concat(this.#held);
    this.#held = [];
    this.#tail = Buffer.alloc(0);
    return rest;
  }
}

function lastThree(before: Buffer, b: Buffer): Buffer {
  if (b.length >= 3) return b.subarray(b.length - 3);
  const both = Buffer.concat([before, b]);
  return both.subarray(Math.max(0, both.length - 3));
}

/** Serialise one frame for the client (with the upstream's event id, when a same-format relay keeps it). */
export function formatFrame(data: string, event: string | null = null, id: string | null = null): string {
  if (event === null && id === null && !data.includes('\n')) return `data: ${data}\n\n`;
  const lines = data.split('\n').map((l) => `data: ${l}`);
  return `${event === null ? '' : `event: ${event}\n`}${id === null ? '' : `id: ${id}\n`}${lines.join('\n')}\n\n`;
}
