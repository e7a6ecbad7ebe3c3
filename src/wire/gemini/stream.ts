// `streamGenerateContent?alt=sse`: every SSE frame is `data: <GenerateContentResponse JSON>`, with no event names
// and no [DONE]. A chunk may carry text deltas, thought (reasoning) deltas, whole functionCall parts (never split),
// usageMetadata (cumulative: a later one replaces an earlier one) and, on the last chunk, finishReason.

import { ERRORS, TollgateError, type ErrorCode } from '../../core/errors.js';
import { formatFrame, type SseFrame } from '../sse.js';
import type { CanonicalEvent, StopReason } from '../canonical.js';
import type { StreamParser, StreamRenderer } from '../codec.js';
import { GroundingQueries, countsUsage, geminiCounts, laterCounts, renderGeminiUsage, withGrounding, type GeminiCounts } from './usage.js';
import type { Usage } from '../../ledger/types.js';
import { argsObject, callIdBase, finishReasonFor, isObj, stopReasonFrom, syntheticCallId, type GeminiPart, type Json } from './wire.js';

// ---------------------------------------------------------------------------------------------- parser (upstream)

/**
 * Upstream Gemini frames -> canonical events. Consecutive text parts continue one text block and consecutive thought
 * parts one reasoning block; each functionCall is a block of its own (start, one delta with the whole arguments,
 * stop). A usage event is emitted whenever usageMetadata changes. `terminated` turns true after the chunk carrying
 * finishReason (Gemini has no other terminal marker; usage may come on that same chunk, and is emitted before the
 * finish event). A mid-stream error from Gemini arrives as a bare JSON body, not as a `data:` frame, so SSE framing
 * never shows it; a `data: {"error": ...}` frame is still read as an error event.
 */
export class GeminiStreamParser implements StreamParser {
  #started = false;
  #open: { kind: 'text' | 'reasoning'; index: number } | null = null;
  #next = 0;
  #calls = 0;
  /** The first chunk's `responseId`, and what the answer's made-up call ids are made of (callIdBase, at the first). */
  #responseId: unknown;
  #idBase: string | undefined;
  #lastUsage = '';
  /** The counts so far: each the largest any chunk reported (laterCounts). */
  #counted: GeminiCounts | null = null;
  /** The grounding queries the chunks named, distinct over them all. */
  readonly #grounding = new GroundingQueries();
  #terminated = false;

  get terminated(): boolean {
    return this.#terminated;
  }

  frame(f: SseFrame): CanonicalEvent[] {
    if (f.data.trim() === '') return [];
    let json: unknown;
    try {
      json = JSON.parse(f.data);
    } catch (err) {
      throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'Gemini stream chunk is not valid JSON', { cause: err });
    }
    if (!isObj(json)) throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'Gemini stream chunk is not a JSON object');
    const out: CanonicalEvent[] = [];
    if (isObj(json.error)) {
      const e = json.error;
      this.#terminated = true;
      const message = typeof e.message === 'string' ? e.message : 'upstream error';
      out.push(typeof e.status === 'string' ? { type: 'error', message, code: e.status } : { type: 'error', message });
      return out;
    }
    if (!this.#started) {
      this.#started = true;
      this.#responseId = json.responseId;
      out.push({ type: 'start', id: typeof json.responseId === 'string' ? json.responseId : '', model: typeof json.modelVersion === 'string' ? json.modelVersion : '' });
    }
    const cand = Array.isArray(json.candidates) && isObj(json.candidates[0]) ? json.candidates[0] : null;
    const parts = isObj(cand?.content) && Array.isArray(cand.content.parts) ? cand.content.parts : [];
    for (const p of parts) if (isObj(p)) this.#part(p, out);

    const reported = geminiCounts(json.usageMetadata);
    const named = this.#grounding.add(json);
    if (reported !== null || (named && this.#counted !== null)) {
      // Cumulative: a chunk that reports less than an earlier one is not believed, count by count (laterCounts).
      if (reported !== null) this.#counted = laterCounts(this.#counted, reported);
      const usage = withGrounding(countsUsage(this.#counted!), this.#grounding.count)!;
      const key = JSON.stringify(usage);
      if (key !== this.#lastUsage) {
        this.#lastUsage = key;
        out.push({ type: 'usage', usage });
      }
    }

    let stop: StopReason | null = null;
    if (typeof cand?.finishReason === 'string') stop = stopReasonFrom(cand.finishReason, this.#calls > 0);
    else if (cand === null && isObj(json.promptFeedback) && typeof json.promptFeedback.blockReason === 'string') stop = 'content_filter';
    if (stop !== null) {
      this.#close(out);
      out.push({ type: 'finish', stopReason: stop });
      this.#terminated = true;
    }
    return out;
  }

  end(): CanonicalEvent[] {
    const out: CanonicalEvent[] = [];
    this.#close(out);
    return out;
  }

  #part(p: Json, out: CanonicalEvent[]): void {
    if (typeof p.text === 'string') {
      if (p.thought === true) {
        const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined;
        if (p.text === '' && sig === undefined) return;
        const index = this.#block('reasoning', out);
        if (p.text !== '') out.push({ type: 'reasoning_delta', index, text: p.text });
        if (sig !== undefined) out.push({ type: 'reasoning_signature', index, signature: sig, origin: 'gemini' });
      } else if (p.text !== '') {
        // A thoughtSignature on a text part has no canonical place yet: dropped (an empty text part carrying only
        // a signature is skipped whole).
        out.push({ type: 'text_delta', index: this.#block('text', out), text: p.text });
      }
      return;
    }
    if (isObj(p.functionCall) && typeof p.functionCall.name === 'string') {
      const fc = p.functionCall;
      this.#close(out);
      const index = this.#next++;
      const id = typeof fc.id === 'string' && fc.id !== '' ? fc.id : syntheticCallId(this.#calls, (this.#idBase ??= callIdBase(this.#responseId)));
      this.#calls++;
      const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined;
      out.push(sig === undefined ? { type: 'tool_call_start', index, id, name: fc.name as string } : { type: 'tool_call_start', index, id, name: fc.name as string, signature: sig, origin: 'gemini' });
      out.push({ type: 'tool_call_delta', index, arguments: JSON.stringify(isObj(fc.args) ? fc.args : {}) });
      out.push({ type: 'block_stop', index });
    }
  }

  /** The index of the open block of `kind`, opening one (and closing another kind) when needed. */
  #block(kind: 'text' | 'reasoning', out: CanonicalEvent[]): number {
    if (this.#open?.kind === kind) return this.#open.index;
    this.#close(out);
    const index = this.#next++;
    this.#open = { kind, index };
    out.push(kind === 'text' ? { type: 'text_start', index } : { type: 'reasoning_start', index });
    return index;
  }

  #close(out: CanonicalEvent[]): void {
    if (this.#open === null) return;
    out.push({ type: 'block_stop', index: this.#open.index });
    this.#open = null;
  }
}

// ---------------------------------------------------------------------------------------------- renderer (client)

/**
 * Canonical events -> Gemini SSE for a client. Text and reasoning deltas go out at once, one chunk each; a function
 * call is buffered until its block_stop and sent whole (Gemini never splits one). finishReason and usageMetadata go
 * on one last chunk written by end(), because some producers (an OpenAI Chat upstream) report usage after the
 * finish event.
 */
export class GeminiStreamRenderer implements StreamRenderer {
  readonly #model: string;
  #id = '';
  readonly #calls = new Map<number, { id: string; name: string; args: string; signature?: string }>();
  #finish: string | null = null;
  #usage: Usage | null = null;
  #done = false;

  constructor(model: string) {
    this.#model = model;
  }

  event(e: CanonicalEvent): string {
    if (this.#done) return '';
    switch (e.type) {
      case 'start':
        this.#id = e.id;
        return '';
      case 'text_delta':
        return e.text === '' ? '' : this.#chunk([{ text: e.text }]);
      case 'reasoning_delta':
        return e.text === '' ? '' : this.#chunk([{ text: e.text, thought: true }]);
      case 'reasoning_signature':
        // Only Gemini's own signatures go to a Gemini client: another family's would be rejected on its next turn.
        return e.origin === 'gemini' ? this.#chunk([{ text: '', thought: true, thoughtSignature: e.signature }]) : '';
      case 'tool_call_start':
        this.#calls.set(e.index, { id: e.id, name: e.name, args: '', ...(e.origin === 'gemini' && e.signature !== undefined ? { signature: e.signature } : {}) });
        return '';
      case 'tool_call_delta': {
        const c = this.#calls.get(e.index);
        if (c) c.args += e.arguments;
        if (c && e.origin === 'gemini' && e.signature !== undefined) c.signature = e.signature;
        return '';
      }
      case 'block_stop':
        return this.#flushCall(e.index);
      case 'usage':
        this.#usage = e.usage;
        return '';
      case 'finish':
        this.#finish = finishReasonFor(e.stopReason);
        return this.#flushAll();
      case 'error':
        return this.error(e.code ?? 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', e.message);
      default:
        return '';
    }
  }

  /** The last chunk: finishReason and usageMetadata (whichever are known), after any call still buffered. */
  end(): string {
    if (this.#done) return '';
    this.#done = true;
    const pending = this.#flushAll();
    if (this.#finish === null && this.#usage === null) return pending;
    const out: Json = {};
    if (this.#finish !== null) out.candidates = [{ content: { role: 'model', parts: [] }, finishReason: this.#finish, index: 0 }];
    if (this.#usage !== null) out.usageMetadata = renderGeminiUsage(this.#usage);
    return pending + formatFrame(JSON.stringify(this.#wrap(out)));
  }

  /**
   * Gemini has no in-stream error event. Mid-stream, the API writes its error body as bare JSON, not as a `data:`
   * frame, and that is what @google/genai checks: it JSON.parses each raw read and throws an ApiError when it holds
   * `error` with a 4xx/5xx code (a `data: {"error": ...}` frame would instead reach the caller as an empty
   * response). So this writes `{"error":{"code","message","status"}}` on one line, with no blank line after it: if
   * the client's read joins it to earlier frames, the SDK still fails the stream ("Incomplete JSON segment at the
   * end"). Braces inside the message are escaped (\u007b) so that the Python SDK's brace counting stays balanced.
   */
  error(code: string, message: string): string {
    if (this.#done) return '';
    this.#done = true;
    const http = Object.hasOwn(ERRORS, code) ? ERRORS[code as ErrorCode].status : Object.hasOwn(GOOGLE_STATUS, code) ? GOOGLE_STATUS[code]! : 500;
    const status = Object.hasOwn(GOOGLE_STATUS, code) ? code : googleStatus(http);
    const msg = JSON.stringify(message).replace(/[{}]/g, (c) => (c === '{' ? '\\u007b' : '\\u007d'));
    return `{"error":{"code":${http},"message":${msg},"status":"${status}"}}\n`;
  }

  #flushCall(index: number): string {
    const c = this.#calls.get(index);
    if (!c) return '';
    this.#calls.delete(index);
    const part: GeminiPart = { functionCall: { id: c.id, name: c.name, args: argsObject(c.args) } };
    if (c.signature !== undefined) part.thoughtSignature = c.signature;
    return this.#chunk([part]);
  }

  #flushAll(): string {
    let s = '';
    for (const index of [...this.#calls.keys()].sort((a, b) => a - b)) s += this.#flushCall(index);
    return s;
  }

  #chunk(parts: GeminiPart[]): string {
    return formatFrame(JSON.stringify(this.#wrap({ candidates: [{ content: { role: 'model', parts }, index: 0 }] })));
  }

  #wrap(body: Json): Json {
    body.modelVersion = this.#model;
    if (this.#id !== '') body.responseId = this.#id;
    return body;
  }
}

/** google.rpc status names Gemini uses, with their HTTP status (an upstream Gemini error event carries the name). */
const GOOGLE_STATUS: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

/** HTTP status -> the google.rpc status name Gemini puts in `error.status`. */
function googleStatus(status: number): string {
  switch (status) {
    case 400:
    case 413:
    case 415:
      return 'INVALID_ARGUMENT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 502:
    case 503:
      return 'UNAVAILABLE';
    case 504:
      return 'DEADLINE_EXCEEDED';
    default:
      return 'INTERNAL';
  }
}
