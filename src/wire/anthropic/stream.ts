// Anthropic Messages streaming: upstream SSE frames -> canonical events (StreamParser), and canonical events -> the
// SSE a client's Anthropic SDK reads (StreamRenderer). Each event is `event: <type>\ndata: <json>\n\n`.

import type { SseFrame } from '../sse.js';
import { formatFrame } from '../sse.js';
import type { CanonicalEvent, StopReason } from '../canonical.js';
import type { Usage } from '../../ledger/types.js';
import type { StreamParser, StreamRenderer } from '../codec.js';
import { errorBody } from './errors.js';
import { isObj, str, type Json } from './json.js';
import { messageId, parseStopReason, renderStopReason } from './response.js';
import { anthropicUsage, mergeUsage, renderUsage } from './usage.js';

type Kind = 'text' | 'reasoning' | 'tool';

// ---------------------------------------------------------------------------------------------------- parser

/**
 * Canonical block indexes count only the blocks the canonical model can carry, in order; Anthropic blocks it cannot
 * (server_tool_use, web_search_tool_result, ..., and redacted_thinking, which no canonical event can hold) are
 * skipped with their deltas.
 *
 * Usage: message_start reports the input-side buckets (its output_tokens is a placeholder for the first token, not
 * the answer's count, so output stays null there: a stream cut before message_delta then has unknown output rather
 * than a wrong one). message_delta's usage is cumulative; its buckets replace the earlier ones, the ones it omits
 * are kept. Every usage event carries the whole usage known so far, so the last one is the answer's usage.
 */
export class AnthropicStreamParser implements StreamParser {
  #terminated = false;
  #usage: Usage | null = null;
  readonly #blocks = new Map<number, { index: number; kind: Kind; args: string; input: string }>();
  #next = 0;

  get terminated(): boolean {
    return this.#terminated;
  }

  frame(f: SseFrame): CanonicalEvent[] {
    if (f.data.trim() === '') return [];
    let data: unknown;
    try {
      data = JSON.parse(f.data);
    } catch {
      return [{ type: 'error', message: 'the upstream sent a stream event whose data is not JSON', code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' }];
    }
    if (!isObj(data)) return [];
    switch (str(data.type) ?? f.event) {
      case 'message_start':
        return this.#messageStart(isObj(data.message) ? data.message : {});
      case 'content_block_start':
        return this.#blockStart(data.index, isObj(data.content_block) ? data.content_block : {});
      case 'content_block_delta':
        return this.#blockDelta(data.index, isObj(data.delta) ? data.delta : {});
      case 'content_block_stop':
        return this.#blockStop(data.index);
      case 'message_delta':
        return this.#messageDelta(isObj(data.delta) ? data.delta : {}, data.usage);
      case 'message_stop':
        this.#terminated = true;
        return [];
      case 'error': {
        const e = isObj(data.error) ? data.error : {};
        return [{ type: 'error', message: str(e.message) ?? 'upstream error', code: str(e.type) ?? 'api_error' }];
      }
      default: // ping, and event types added later
        return [];
    }
  }

  end(): CanonicalEvent[] {
    return [];
  }

  #messageStart(m: Json): CanonicalEvent[] {
    const out: CanonicalEvent[] = [{ type: 'start', id: str(m.id) ?? '', model: str(m.model) ?? '' }];
    const u = anthropicUsage(m.usage);
    if (u !== null && (u.input !== null || u.cached !== null || u.cacheWrite !== null)) {
      this.#usage = { ...u, output: null, reasoning: null };
      out.push({ type: 'usage', usage: this.#usage });
    }
    return out;
  }

  #blockStart(upstreamIndex: unknown, cb: Json): CanonicalEvent[] {
    if (typeof upstreamIndex !== 'number') return [];
    const open = (kind: Kind, input = ''): number => {
      const index = this.#next++;
      this.#blocks.set(upstreamIndex, { index, kind, args: '', input });
      return index;
    };
    switch (cb.type) {
      case 'text': {
        const index = open('text');
        const text = str(cb.text) ?? '';
        return text === '' ? [{ type: 'text_start', index }] : [{ type: 'text_start', index }, { type: 'text_delta', index, text }];
      }
      case 'thinking': {
        const index = open('reasoning');
        const out: CanonicalEvent[] = [{ type: 'reasoning_start', index }];
        const text = str(cb.thinking) ?? '';
        const signature = str(cb.signature) ?? '';
        if (text !== '') out.push({ type: 'reasoning_delta', index, text });
        if (signature !== '') out.push({ type: 'reasoning_signature', index, signature, origin: 'anthropic' });
        return out;
      }
      case 'tool_use': {
        // The start carries `input: {}`; the arguments arrive as input_json_delta pieces.
        const input = isObj(cb.input) && Object.keys(cb.input).length > 0 ? JSON.stringify(cb.input) : '';
        const index = open('tool', input);
        return [{ type: 'tool_call_start', index, id: str(cb.id) ?? '', name: str(cb.name) ?? '' }];
      }
      default:
        return [];
    }
  }

  #blockDelta(upstreamIndex: unknown, d: Json): CanonicalEvent[] {
    const b = typeof upstreamIndex === 'number' ? this.#blocks.get(upstreamIndex) : undefined;
    if (b === undefined) return [];
    const index = b.index;
    switch (d.type) {
      case 'text_delta': {
        const text = str(d.text) ?? '';
        return b.kind === 'text' && text !== '' ? [{ type: 'text_delta', index, text }] : [];
      }
      case 'thinking_delta': {
        const text = str(d.thinking) ?? '';
        return b.kind === 'reasoning' && text !== '' ? [{ type: 'reasoning_delta', index, text }] : [];
      }
      case 'signature_delta': {
        const signature = str(d.signature) ?? '';
        return b.kind === 'reasoning' && signature !== '' ? [{ type: 'reasoning_signature', index, signature, origin: 'anthropic' }] : [];
      }
      case 'input_json_delta': {
        const piece = str(d.partial_json) ?? '';
        if (b.kind !== 'tool' || piece === '') return [];
        b.args += piece;
        return [{ type: 'tool_call_delta', index, arguments: piece }];
      }
      default: // citations_delta and later additions
        return [];
    }
  }

  #blockStop(upstreamIndex: unknown): CanonicalEvent[] {
    const b = typeof upstreamIndex === 'number' ? this.#blocks.get(upstreamIndex) : undefined;
    if (b === undefined) return [];
    this.#blocks.delete(upstreamIndex as number);
    // A call without arguments streams no (or only empty) input_json_delta: its input is the start's, {} at least,
    // as in the non-streamed answer.
    if (b.kind === 'tool' && b.args === '') return [{ type: 'tool_call_delta', index: b.index, arguments: b.input || '{}' }, { type: 'block_stop', index: b.index }];
    return [{ type: 'block_stop', index: b.index }];
  }

  #messageDelta(d: Json, rawUsage: unknown): CanonicalEvent[] {
    const out: CanonicalEvent[] = [];
    if (typeof d.stop_reason === 'string') {
      const stopSequence = str(d.stop_sequence);
      out.push({ type: 'finish', stopReason: parseStopReason(d.stop_reason), ...(stopSequence === undefined ? {} : { stopSequence }) });
    }
    const later = anthropicUsage(rawUsage);
    if (later !== null) {
      this.#usage = mergeUsage(this.#usage, later, isObj(rawUsage) ? rawUsage.service_tier : undefined);
      out.push({ type: 'usage', usage: this.#usage! });
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------- renderer

const frame = (type: string, payload: Json): string => formatFrame(JSON.stringify({ type, ...payload }), type);

/**
 * Writes exactly the event sequence the Anthropic SDK accumulates: message_start, then content_block_start / _delta
 * / _stop per block (indexes 0, 1, ... in start order), then message_delta and message_stop.
 *
 * - message_start is held back until the first block (or the end), so a usage event that follows `start` (as from
 *   an Anthropic upstream) puts the input and cache counts in it, where older SDKs read them.
 * - `finish` is remembered; message_delta (stop_reason and the last usage: output_tokens, plus the input and cache
 *   fields newer API versions also send there) and message_stop are written by end(). Some producers report usage
 *   after their finish (OpenAI's include_usage chunk), so only end() knows the final numbers.
 * - A delta for a block that was never started (or was already stopped) opens one implicitly; tool-call arguments
 *   without their tool_call_start are dropped (a tool_use block needs an id and a name).
 * - Blocks still open at the end are stopped before message_delta.
 * - The message id is the canonical one when it starts with msg_, else `msg_<id>`; `msg_tollgate` if no start came.
 */
export class AnthropicStreamRenderer implements StreamRenderer {
  readonly #model: string;
  #id = 'tollgate';
  #started = false;
  #done = false;
  #usage: Usage | null = null;
  #finish: { stopReason: StopReason; stopSequence?: string } | null = null;
  readonly #open = new Map<number, { index: number; kind: Kind }>();
  #next = 0;

  constructor(model: string) {
    this.#model = model;
  }

  event(e: CanonicalEvent): string {
    if (this.#done) return '';
    switch (e.type) {
      case 'start':
        this.#id = e.id;
        return '';
      case 'usage':
        this.#usage = e.usage;
        return '';
      case 'finish':
        this.#finish = e.stopSequence === undefined ? { stopReason: e.stopReason } : { stopReason: e.stopReason, stopSequence: e.stopSequence };
        return '';
      case 'text_start':
        return this.#ensure(e.index, 'text').head;
      case 'text_delta': {
        const { head, index } = this.#ensure(e.index, 'text');
        return e.text === '' ? head : head + frame('content_block_delta', { index, delta: { type: 'text_delta', text: e.text } });
      }
      case 'reasoning_start':
        return this.#ensure(e.index, 'reasoning').head;
      case 'reasoning_delta': {
        const { head, index } = this.#ensure(e.index, 'reasoning');
        return e.text === '' ? head : head + frame('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: e.text } });
      }
      case 'reasoning_signature': {
        // Only Anthropic's own signatures go to an Anthropic client: another family's would be rejected upstream.
        if (e.origin !== 'anthropic') return '';
        const { head, index } = this.#ensure(e.index, 'reasoning');
        return head + frame('content_block_delta', { index, delta: { type: 'signature_delta', signature: e.signature } });
      }
      case 'tool_call_start':
        if (this.#open.get(e.index)?.kind === 'tool') return '';
        return this.#ensure(e.index, 'tool', { type: 'tool_use', id: e.id, name: e.name, input: {} }).head;
      case 'tool_call_delta': {
        const b = this.#open.get(e.index);
        if (b?.kind !== 'tool' || e.arguments === '') return '';
        return frame('content_block_delta', { index: b.index, delta: { type: 'input_json_delta', partial_json: e.arguments } });
      }
      case 'block_stop': {
        const b = this.#open.get(e.index);
        if (b === undefined) return '';
        this.#open.delete(e.index);
        return frame('content_block_stop', { index: b.index });
      }
      case 'error':
        this.#done = true;
        return frame('error', errorBody(e.code ?? 'api_error', e.message));
    }
  }

  end(): string {
    if (this.#done) return '';
    this.#done = true;
    let out = this.#messageStart();
    for (const b of [...this.#open.values()].sort((x, y) => x.index - y.index)) out += frame('content_block_stop', { index: b.index });
    this.#open.clear();
    out += frame('message_delta', {
      delta: { stop_reason: this.#finish === null ? null : renderStopReason(this.#finish.stopReason), stop_sequence: this.#finish?.stopSequence ?? null },
      usage: renderUsage(this.#usage),
    });
    return out + frame('message_stop', {});
  }

  error(code: string, message: string): string {
    if (this.#done) return '';
    this.#done = true;
    return frame('error', errorBody(code, message));
  }

  #messageStart(): string {
    if (this.#started) return '';
    this.#started = true;
    return frame('message_start', {
      message: { id: messageId(this.#id), type: 'message', role: 'assistant', model: this.#model, content: [], stop_reason: null, stop_sequence: null, usage: renderUsage(this.#usage) },
    });
  }

  /** The open block for a canonical index, opening it (and message_start first) when needed. `head`: what that wrote. */
  #ensure(canonical: number, kind: Kind, block?: Json): { head: string; index: number } {
    const b = this.#open.get(canonical);
    if (b?.kind === kind) return { head: '', index: b.index };
    let head = this.#messageStart();
    if (b !== undefined) {
      // The producer reused an index for another kind of block: close the old one.
      head += frame('content_block_stop', { index: b.index });
    }
    const index = this.#next++;
    this.#open.set(canonical, { index, kind });
    const contentBlock = block ?? (kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' });
    return { head: head + frame('content_block_start', { index, content_block: contentBlock }), index };
  }
}
