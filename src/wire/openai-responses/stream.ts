// Upstream Responses SSE -> canonical events.
//
// - Block indexes follow output order: each output_text / refusal part of a message (output_index, content_index),
//   each reasoning item and each function_call item is one canonical block, numbered when it first appears. A
//   custom_tool_call item is a call marked custom whose arguments (`{"input": ...}`) come in one delta at its end.
// - A reasoning item's summary parts form one reasoning block, separated by a blank line (as in parseResponse).
//   Its encrypted content, when the item carries some, travels as a `reasoning_signature` holding this family's
//   envelope (see shared.ts), just before the block stops. A reasoning item with no summary and no encrypted
//   content yields no block.
// - `*.done` events only add what the deltas did not already carry, so a stream without deltas still arrives whole;
//   output items that only appear in the terminal response are emitted from it.
// - Terminal events: response.completed, response.incomplete, response.failed and (spec: Responses passthrough)
//   response.done. Usage is read only from the terminal response object. Anything after the first terminal event,
//   a repeated response.completed included, is ignored, so usage and finish are counted once.
// - response.failed (or a terminal response whose status is failed / cancelled) gives an `error` event, not a
//   finish. An `error` event gives an `error` event and does not terminate the stream.
// - Data that is not JSON (keep-alives, `[DONE]` from proxies) is ignored.

import type { SseFrame } from '../sse.js';
import type { CanonicalEvent } from '../canonical.js';
import type { StreamParser } from '../codec.js';
import { stopReasonOf } from './response.js';
import { arr, encodeEnvelope, isObj, type Json, reasoningText, str } from './shared.js';
import { responsesUsage } from './usage.js';

interface Block {
  readonly index: number;
  text: string;
  open: boolean;
}

interface ReasoningBlock extends Block {
  /** The summary / content part being filled ('s0', 'c1', ...); a new one is preceded by a blank line. */
  part: string | null;
  partText: string;
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'response.done']);
const num = (v: unknown): number => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);

/** What a `.done` event adds to what the deltas already carried ('' when it disagrees: the deltas stand). */
const remainder = (streamed: string, full: string): string => (full.startsWith(streamed) ? full.slice(streamed.length) : '');

export class ResponsesStreamParser implements StreamParser {
  #terminated = false;
  #started = false;
  #next = 0;
  readonly #texts = new Map<string, Block>();
  readonly #reasoning = new Map<number, ReasoningBlock>();
  readonly #calls = new Map<number, Block>();
  /** A custom tool call's input so far, by output index: its arguments (`{"input": ...}`) are sent whole when it is done. */
  readonly #customInputs = new Map<number, string>();
  #sawCall = false;
  #sawRefusal = false;

  get terminated(): boolean {
    return this.#terminated;
  }

  frame(f: SseFrame): CanonicalEvent[] {
    if (this.#terminated) return [];
    let data: unknown;
    try {
      data = JSON.parse(f.data);
    } catch {
      return [];
    }
    if (!isObj(data)) return [];
    const type = str(data.type) ?? f.event ?? '';
    const out: CanonicalEvent[] = [];
    const o = num(data.output_index);
    const c = num(data.content_index);

    if (TERMINAL.has(type)) {
      this.#terminal(type, isObj(data.response) ? data.response : {}, out);
      return out;
    }
    switch (type) {
      case 'response.created':
      case 'response.queued':
      case 'response.in_progress':
        if (isObj(data.response)) this.#start(data.response, out);
        break;
      case 'response.output_item.added':
        if (isObj(data.item) && (data.item.type === 'function_call' || data.item.type === 'custom_tool_call')) this.#openCall(o, data.item, out);
        break;
      case 'response.output_item.done':
        if (isObj(data.item)) this.#itemDone(o, data.item, out);
        break;
      case 'response.content_part.added':
        if (isObj(data.part) && (data.part.type === 'output_text' || data.part.type === 'refusal')) {
          if (data.part.type === 'refusal') this.#sawRefusal = true;
          const b = this.#text(o, c, out);
          this.#textDelta(b, partText(data.part), out);
        }
        break;
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        if (type === 'response.refusal.delta') this.#sawRefusal = true;
        this.#textDelta(this.#text(o, c, out), str(data.delta) ?? '', out);
        break;
      case 'response.output_text.done':
      case 'response.refusal.done': {
        const b = this.#text(o, c, out);
        this.#textDelta(b, remainder(b.text, str(data.text) ?? str(data.refusal) ?? ''), out);
        break;
      }
      case 'response.content_part.done':
        if (isObj(data.part)) this.#closeText(o, c, partText(data.part), out);
        break;
      case 'response.reasoning_summary_part.added':
        this.#reasoningPart(o, `s${num(data.summary_index)}`, out);
        break;
      case 'response.reasoning_summary_text.delta':
        this.#reasoningDelta(this.#reasoningPart(o, `s${num(data.summary_index)}`, out), str(data.delta) ?? '', out);
        break;
      case 'response.reasoning_summary_text.done': {
        const b = this.#reasoningPart(o, `s${num(data.summary_index)}`, out);
        this.#reasoningDelta(b, remainder(b.partText, str(data.text) ?? ''), out);
        break;
      }
      case 'response.reasoning_text.delta':
        this.#reasoningDelta(this.#reasoningPart(o, `c${c}`, out), str(data.delta) ?? '', out);
        break;
      case 'response.function_call_arguments.delta': {
        const b = this.#calls.get(o);
        if (b?.open) this.#callDelta(b, str(data.delta) ?? '', out);
        break;
      }
      case 'response.function_call_arguments.done': {
        const b = this.#calls.get(o);
        if (b?.open) this.#callDelta(b, remainder(b.text, str(data.arguments) ?? ''), out);
        break;
      }
      case 'response.custom_tool_call_input.delta':
        this.#customInputs.set(o, (this.#customInputs.get(o) ?? '') + (str(data.delta) ?? ''));
        break;
      case 'response.custom_tool_call_input.done':
        this.#customInputs.set(o, str(data.input) ?? this.#customInputs.get(o) ?? '');
        break;
      case 'error': {
        const e = isObj(data.error) ? data.error : data;
        const code = str(e.code);
        out.push({ type: 'error', message: str(e.message) ?? 'upstream error', ...(code === undefined ? {} : { code }) });
        break;
      }
      default:
        break;
    }
    return out;
  }

  end(): CanonicalEvent[] {
    const out: CanonicalEvent[] = [];
    if (!this.#terminated) this.#closeAll(out);
    return out;
  }

  #start(resp: Json, out: CanonicalEvent[]): void {
    if (this.#started) return;
    this.#started = true;
    out.push({ type: 'start', id: str(resp.id) ?? '', model: str(resp.model) ?? '' });
  }

  // -- text ------------------------------------------------------------------------------------------------------

  #text(o: number, c: number, out: CanonicalEvent[]): Block {
    const key = `${o}:${c}`;
    let b = this.#texts.get(key);
    if (!b) {
      b = { index: this.#next++, text: '', open: true };
      this.#texts.set(key, b);
      out.push({ type: 'text_start', index: b.index });
    }
    return b;
  }

  #textDelta(b: Block, text: string, out: CanonicalEvent[]): void {
    if (!b.open || text === '') return;
    b.text += text;
    out.push({ type: 'text_delta', index: b.index, text });
  }

  #closeText(o: number, c: number, full: string, out: CanonicalEvent[]): void {
    const existing = this.#texts.get(`${o}:${c}`);
    if (existing && !existing.open) return;
    const b = existing ?? this.#text(o, c, out);
    this.#textDelta(b, remainder(b.text, full), out);
    this.#stop(b, out);
  }

  // -- reasoning ---------------------------------------------------------------------------------------------------

  #reasoningBlock(o: number, out: CanonicalEvent[]): ReasoningBlock {
    let b = this.#reasoning.get(o);
    if (!b) {
      b = { index: this.#next++, text: '', open: true, part: null, partText: '' };
      this.#reasoning.set(o, b);
      out.push({ type: 'reasoning_start', index: b.index });
    }
    return b;
  }

  #reasoningPart(o: number, key: string, out: CanonicalEvent[]): ReasoningBlock {
    const b = this.#reasoningBlock(o, out);
    if (b.open && b.part !== key) {
      if (b.part !== null) this.#reasoningDelta(b, '\n\n', out);
      b.part = key;
      b.partText = '';
    }
    return b;
  }

  #reasoningDelta(b: ReasoningBlock, text: string, out: CanonicalEvent[]): void {
    if (!b.open || text === '') return;
    b.text += text;
    b.partText += text;
    out.push({ type: 'reasoning_delta', index: b.index, text });
  }

  // -- function calls ----------------------------------------------------------------------------------------------

  #openCall(o: number, item: Json, out: CanonicalEvent[]): Block {
    let b = this.#calls.get(o);
    if (!b) {
      b = { index: this.#next++, text: '', open: true };
      this.#calls.set(o, b);
      this.#sawCall = true;
      const custom = item.type === 'custom_tool_call' ? { custom: true } : {};
      out.push({ type: 'tool_call_start', index: b.index, id: str(item.call_id) ?? '', name: str(item.name) ?? '', ...custom });
      this.#callDelta(b, str(item.arguments) ?? '', out);
    }
    return b;
  }

  #callDelta(b: Block, args: string, out: CanonicalEvent[]): void {
    if (!b.open || args === '') return;
    b.text += args;
    out.push({ type: 'tool_call_delta', index: b.index, arguments: args });
  }

  // -- items and the end -------------------------------------------------------------------------------------------

  #stop(b: Block, out: CanonicalEvent[]): void {
    if (!b.open) return;
    b.open = false;
    out.push({ type: 'block_stop', index: b.index });
  }

  /** An output item is complete: emit what its deltas did not carry, then close its blocks. Idempotent. */
  #itemDone(o: number, item: Json, out: CanonicalEvent[]): void {
    if (item.type === 'message') {
      arr(item.content).forEach((part, c) => {
        if (isObj(part) && (part.type === 'output_text' || part.type === 'refusal')) {
          if (part.type === 'refusal') this.#sawRefusal = true;
          this.#closeText(o, c, partText(part), out);
        }
      });
      for (const [key, b] of this.#texts) if (key.startsWith(`${o}:`)) this.#stop(b, out);
    } else if (item.type === 'reasoning') {
      const existing = this.#reasoning.get(o);
      if (existing && !existing.open) return;
      const { text, present } = reasoningText(item);
      const enc = str(item.encrypted_content);
      if (!existing && !present && enc === undefined) return;
      const b = existing ?? this.#reasoningBlock(o, out);
      this.#reasoningDelta(b, remainder(b.text, text), out);
      if (enc !== undefined) out.push({ type: 'reasoning_signature', index: b.index, signature: encodeEnvelope(str(item.id), enc), origin: 'openai-responses' });
      this.#stop(b, out);
    } else if (item.type === 'function_call') {
      const existing = this.#calls.get(o);
      if (existing && !existing.open) return;
      const b = existing ?? this.#openCall(o, item, out);
      this.#callDelta(b, remainder(b.text, str(item.arguments) ?? ''), out);
      this.#stop(b, out);
    } else if (item.type === 'custom_tool_call') {
      const existing = this.#calls.get(o);
      if (existing && !existing.open) return;
      const b = existing ?? this.#openCall(o, item, out);
      this.#callDelta(b, JSON.stringify({ input: str(item.input) ?? this.#customInputs.get(o) ?? '' }), out);
      this.#stop(b, out);
    }
  }

  #closeAll(out: CanonicalEvent[]): void {
    const open = [...this.#texts.values(), ...this.#reasoning.values(), ...this.#calls.values()].filter((b) => b.open);
    for (const b of open.sort((a, b) => a.index - b.index)) this.#stop(b, out);
  }

  #terminal(type: string, resp: Json, out: CanonicalEvent[]): void {
    this.#terminated = true;
    this.#start(resp, out);
    arr(resp.output).forEach((item, o) => {
      if (isObj(item)) this.#itemDone(o, item, out);
    });
    this.#closeAll(out);
    const usage = responsesUsage(resp.usage, resp.output, resp.service_tier);
    if (usage !== null) out.push({ type: 'usage', usage });
    const status = str(resp.status) ?? (type === 'response.incomplete' ? 'incomplete' : type === 'response.failed' ? 'failed' : 'completed');
    if (status === 'failed' || status === 'cancelled') {
      const err = isObj(resp.error) ? resp.error : {};
      const code = str(err.code);
      out.push({ type: 'error', message: str(err.message) ?? `upstream response ${status}`, ...(code === undefined ? {} : { code }) });
      return;
    }
    const reason = isObj(resp.incomplete_details) ? str(resp.incomplete_details.reason) : undefined;
    out.push({ type: 'finish', stopReason: stopReasonOf(status, reason, this.#sawCall, this.#sawRefusal) });
  }
}

function partText(part: Json): string {
  return str(part.text) ?? str(part.refusal) ?? '';
}
