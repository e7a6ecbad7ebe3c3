// Server-sent events, layer one and two: bytes -> frames. A frame is what lies between blank lines; its `data`
// lines are joined with '\n'. Comments (lines starting with ':') are dropped. Works on any chunking of the bytes.

export interface SseFrame {
  readonly event: string | null;
  readonly data: string;
  readonly id: string | null;
}

export class SseParser {
  readonly #decoder = new TextDecoder('utf-8');
  #buf = '';

  /** Feed bytes; returns the frames completed by them. */
  push(chunk: Uint8Array): SseFrame[] {
    this.#buf += this.#decoder.decode(chunk, { stream: true });
    return this.#drain(false);
  }

  /** End of input: a final frame without its blank line still counts. */
  end(): SseFrame[] {
    this.#buf += this.#decoder.decode();
    return this.#drain(true);
  }

  #drain(final: boolean): SseFrame[] {
    const frames: SseFrame[] = [];
    for (;;) {
      const m = /\r\n\r\n|\n\n|\r\r/.exec(this.#buf);
      if (!m) break;
      const raw = this.#buf.slice(0, m.index);
      this.#buf = this.#buf.slice(m.index + m[0].length);
      const f = parseFrame(raw);
      if (f) frames.push(f);
    }
    if (final && this.#buf.trim() !== '') {
      const f = parseFrame(this.#buf);
      this.#buf = '';
      if (f) frames.push(f);
    }
    return frames;
  }
}

function parseFrame(raw: string): SseFrame | null {
  let event: string | null = null;
  let id: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(/\r\n|\n|\r/)) {
    if (line === '' || line.startsWith(':')) continue;
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

/** Serialise one frame for the client. */
export function formatFrame(data: string, event: string | null = null): string {
  if (event === null && !data.includes('\n')) return `data: ${data}\n\n`;
  const lines = data.split('\n').map((l) => `data: ${l}`);
  return `${event === null ? '' : `event: ${event}\n`}${lines.join('\n')}\n\n`;
}
