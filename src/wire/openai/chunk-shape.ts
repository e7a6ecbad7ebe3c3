// The text of a stream's content chunks around their content. An OpenAI-format stream sends most of its answer as
// chunks that differ only in the text of `choices[0].delta.content` (and, at OpenAI, the random `obfuscation` padding
// beside it): the same id, model, fingerprint, index and nulls every time. Once one such chunk has been parsed, a
// chunk that is the same text with other plain strings in those places is the same JSON with other values there, so
// what the relay learns from it (its text; no usage, no error, no finish) is known without parsing it: about 1 µs a
// chunk (docs/benchmarks.md, "A stream's content chunks read without a parse, and the end of a stream in its last
// write").
//
// Exact, not a guess: a chunk is taken only when it is the learnt text with each hole holding a JSON string of plain
// characters (no escape, no control character), which makes it valid JSON that parses to the learnt chunk with those
// strings in place. Anything else (an escape, another field, a finish, usage, an error) is parsed as before.

/** The keys whose string values are holes: the content first (its value is what the relay reads). */
const HOLE_KEYS = ['"content":', '"obfuscation":'] as const;

/** A content chunk parsed once: its text and what it held where the holes are. */
export interface LearntChunk {
  /** The frame's data (the JSON text). */
  readonly data: string;
  /** `choices[0].delta.content` as parsed. */
  readonly content: string;
  /** The chunk's top-level `obfuscation` as parsed (undefined: none). */
  readonly obfuscation: unknown;
}

/** Where a hole's JSON string starts and ends (its quotes included) in `data`, or null when the key is not there once. */
function holeOf(data: string, key: string): { start: number; end: number } | null {
  const at = data.indexOf(`${key}"`);
  if (at === -1 || data.indexOf(`${key}"`, at + 1) !== -1) return null;
  const start = at + key.length;
  // The string's closing quote: the first quote not escaped.
  for (let i = start + 1; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return { start, end: i + 1 };
  }
  return null;
}

/** Whether `s` is the inside of a JSON string as it is: no quote, no backslash, no control character. */
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

export class ChunkShape {
  /** The text around the holes, in order (one more than the holes); null: nothing learnt. */
  #parts: string[] | null = null;
  /** Which hole is the content. */
  #contentHole = 0;

  /**
   * Learn the shape from a chunk the relay parsed and found to carry only text: one choice whose delta's `content` is
   * the whole of its output, no usage, no error, no finish. Its holes are checked against the parse (each key once in
   * the text, its string decoding to the parsed value); a chunk whose text does not show them so teaches nothing. A
   * chunk that begins as the learnt shape does (its text up to the first hole) is not learnt from again: what made it
   * parsed is past that, most often an escape in its content, and learning would make the same shape once more.
   */
  learn(chunk: LearntChunk): void {
    if (this.#parts !== null && chunk.data.startsWith(this.#parts[0]!)) return;
    const content = holeOf(chunk.data, HOLE_KEYS[0]);
    if (content === null || JSON.parse(chunk.data.slice(content.start, content.end)) !== chunk.content) return;
    const holes = [content];
    if (chunk.obfuscation !== undefined) {
      const pad = holeOf(chunk.data, HOLE_KEYS[1]);
      if (pad === null || typeof chunk.obfuscation !== 'string' || JSON.parse(chunk.data.slice(pad.start, pad.end)) !== chunk.obfuscation) return;
      holes.push(pad);
    }
    holes.sort((a, b) => a.start - b.start);
    const parts: string[] = [];
    let at = 0;
    for (const h of holes) {
      parts.push(chunk.data.slice(at, h.start));
      at = h.end;
    }
    parts.push(chunk.data.slice(at));
    this.#parts = parts;
    this.#contentHole = holes.indexOf(content);
  }

  /**
   * The content of a chunk of the learnt shape, or null when `data` is not one (then it is parsed). The content is
   * never '' here: a chunk with no text says something else (a role, a finish) and is parsed.
   */
  content(data: string): string | null {
    const parts = this.#parts;
    if (parts === null) return null;
    let at = 0;
    let content: string | null = null;
    const holes = parts.length - 1;
    for (let h = 0; h < holes; h++) {
      const part = parts[h]!;
      if (!data.startsWith(part, at)) return null;
      at += part.length;
      if (data.charCodeAt(at) !== 0x22) return null;
      const close = data.indexOf('"', at + 1);
      if (close === -1) return null;
      const inside = data.slice(at + 1, close);
      if (!plain(inside)) return null;
      if (h === this.#contentHole) content = inside;
      at = close + 1;
    }
    const last = parts[holes]!;
    if (data.length - at !== last.length || !data.endsWith(last)) return null;
    return content === '' ? null : content;
  }
}
