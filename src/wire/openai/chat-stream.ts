// Chat Completions streams: upstream `chat.completion.chunk` frames -> canonical events (parser), and canonical
// events -> the client's chunks (renderer).

import { ERRORS, type ErrorCode } from '../../core/errors.js';
import { formatFrame, type SseFrame } from '../sse.js';
import type { CanonicalEvent, StopReason } from '../canonical.js';
import type { Usage } from '../../ledger/types.js';
import type { StreamParser, StreamRenderer } from '../codec.js';
import { chatCustomCall } from './chat-tools.js';
import { finishReasonOf, reasoningOf, renderUsage, stopReasonOf, stopSequenceOf } from './chat-response.js';
import { openaiUsage } from './usage.js';
import { googleExtra, googleSignatureOf } from './google.js';
import { isObject, type Json } from './chat-validate.js';

const sameUsage = (a: Usage, b: Usage): boolean =>
  a.input === b.input && a.cached === b.cached && a.cacheWrite === b.cacheWrite && a.output === b.output && a.reasoning === b.reasoning &&
  a.serviceTier === b.serviceTier && a.audioInput === b.audioInput && a.audioOutput === b.audioOutput;

// ---------------------------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------------------------

/** A tool call seen in the stream; started (given a block index) once its name is known. */
interface ToolCall {
  id: string;
  name: string;
  /** Arguments received before the start could be sent. */
  pending: string;
  /** Every argument fragment so far (whether they make a whole JSON value tells a new call without `index`). */
  args: string;
  block: number | null;
  /** Gemini's thought signature (Google's `extra_content`), from whichever fragment carried it. */
  signature?: string;
}

/**
 * Whether a tool call delta without `index` begins another call than `latest`: it carries another `id`, or it names a
 * function when `latest` has a name already and either another name or whole arguments (a vendor that sends each call
 * whole, often with no id: Gemini's OpenAI-compatible endpoint behind a proxy, Ollama). A name repeated on every
 * fragment of one call (arguments not whole yet) continues it.
 */
function startsAnother(latest: ToolCall, id: unknown, name: unknown): boolean {
  if (typeof id === 'string' && id !== '' && latest.id !== '' && id !== latest.id) return true;
  if (typeof name !== 'string' || name === '' || latest.name === '') return false;
  return name !== latest.name || wholeJson(latest.args);
}

function wholeJson(text: string): boolean {
  if (text.trim() === '') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Upstream chunks -> canonical events. Only choice 0 is read. Each run of reasoning, of text, and each tool call
 * (by its `index`) is a block with its own index; a new block closes the one before. A tool call delta without an
 * `index` (Gemini's OpenAI-compatible endpoint, Ollama, Xinference send each call whole that way) continues the
 * latest call unless it begins another (startsAnother); a new call takes the first index no call has, so an `index`
 * sent on the call's later fragments finds it. A tool call starts once its
 * name is known (arguments that came first are sent right after the start). `[DONE]` terminates; data that is not
 * JSON is ignored; a `{"error": ...}` payload becomes an error event. Usage is sent when a chunk reports it; a
 * repeat of the same numbers is not sent again, and different numbers replace the earlier ones (never summed).
 * A call's `extra_content.google.thought_signature` (Google's endpoint) is its Gemini signature: on its
 * tool_call_start, or on a tool_call_delta when it comes on a fragment after the start.
 */
export class OpenAIChatStreamParser implements StreamParser {
  #terminated = false;
  #started = false;
  #next = 0;
  /** The open block (text, reasoning or the latest tool call), if any. */
  #open: { kind: 'text' | 'reasoning' | 'tool'; index: number } | null = null;
  readonly #tools = new Map<number, ToolCall>();
  /** The key of the latest tool call a delta touched (the call a delta without `index` continues). */
  #lastTool: number | null = null;
  #refusal = false;
  #finished = false;
  #usage: Usage | null = null;
  /** The service tier a chunk said (OpenAI repeats it on every chunk; a vendor may say it on some only). */
  #tier: unknown;

  get terminated(): boolean {
    return this.#terminated;
  }

  frame(f: SseFrame): CanonicalEvent[] {
    if (this.#terminated) return [];
    const data = f.data.trim();
    if (data === '[DONE]') {
      this.#terminated = true;
      return this.#closeAll();
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      return [];
    }
    if (!isObject(json)) return [];
    const out: CanonicalEvent[] = [];
    if (isObject(json.error)) {
      const e = json.error;
      const message = typeof e.message === 'string' ? e.message : 'upstream error';
      out.push(typeof e.code === 'string' ? { type: 'error', message, code: e.code } : { type: 'error', message });
      return out;
    }
    const choice = Array.isArray(json.choices) ? json.choices.find((c) => isObject(c) && (c.index === 0 || c.index === undefined)) : undefined;
    // Azure's first chunk (id '', choices []) is not the start.
    if (!this.#started && ((typeof json.id === 'string' && json.id !== '') || isObject(choice))) this.#start(out, json);
    if (isObject(choice) && !this.#finished) {
      const delta = isObject(choice.delta) ? choice.delta : {};
      const reasoning = reasoningOf(delta);
      if (reasoning !== '') this.#text(out, 'reasoning', reasoning);
      if (typeof delta.content === 'string' && delta.content !== '') this.#text(out, 'text', delta.content);
      if (typeof delta.refusal === 'string' && delta.refusal !== '') {
        this.#refusal = true;
        this.#text(out, 'text', delta.refusal);
      }
      if (Array.isArray(delta.tool_calls)) for (const tc of delta.tool_calls) this.#tool(out, tc, json);
      if (isObject(delta.function_call)) this.#tool(out, { index: -1, id: `${String(json.id ?? '')}-function_call`, function: delta.function_call }, json);
      if (typeof choice.finish_reason === 'string') {
        out.push(...this.#closeAll());
        this.#finished = true;
        const stopSequence = choice.finish_reason === 'stop' ? stopSequenceOf(choice) : undefined;
        const stopReason: StopReason = stopSequence !== undefined ? 'stop_sequence' : stopReasonOf(choice.finish_reason, this.#refusal);
        out.push(stopSequence !== undefined ? { type: 'finish', stopReason, stopSequence } : { type: 'finish', stopReason });
      }
    }
    if (typeof json.service_tier === 'string') this.#tier = json.service_tier;
    const usage = openaiUsage(json.usage, this.#tier);
    if (usage !== null && (this.#usage === null || !sameUsage(usage, this.#usage))) {
      this.#usage = usage;
      out.push({ type: 'usage', usage });
    }
    return out;
  }

  end(): CanonicalEvent[] {
    return this.#closeAll();
  }

  #start(out: CanonicalEvent[], json: Json): void {
    this.#started = true;
    out.push({ type: 'start', id: typeof json.id === 'string' ? json.id : '', model: typeof json.model === 'string' ? json.model : '' });
  }

  #closeOpen(out: CanonicalEvent[]): void {
    if (this.#open !== null) out.push({ type: 'block_stop', index: this.#open.index });
    this.#open = null;
  }

  #text(out: CanonicalEvent[], kind: 'text' | 'reasoning', text: string): void {
    if (this.#open?.kind !== kind) {
      this.#closeOpen(out);
      this.#open = { kind, index: this.#next++ };
      out.push({ type: kind === 'text' ? 'text_start' : 'reasoning_start', index: this.#open.index });
    }
    out.push({ type: kind === 'text' ? 'text_delta' : 'reasoning_delta', index: this.#open.index, text });
  }

  #tool(out: CanonicalEvent[], raw: unknown, json: Json): void {
    if (!isObject(raw)) return;
    const fn = isObject(raw.function) ? raw.function : {};
    const key = typeof raw.index === 'number' ? raw.index : this.#unindexedKey(raw.id, fn.name);
    let call = this.#tools.get(key);
    if (call === undefined) {
      call = { id: '', name: '', pending: '', args: '', block: null };
      this.#tools.set(key, call);
    }
    this.#lastTool = key;
    if (call.id === '' && typeof raw.id === 'string') call.id = raw.id;
    if (call.name === '' && typeof fn.name === 'string') call.name = fn.name;
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    call.args += args;
    // Google's OpenAI-compatible endpoint sends it with the call's name; a later fragment's goes on its delta.
    const sig = call.signature === undefined ? googleSignatureOf(raw) : undefined;
    if (sig !== undefined) call.signature = sig;
    if (call.block === null) {
      call.pending += args;
      if (call.name !== '') this.#startTool(out, call, json);
    } else if (args !== '' || sig !== undefined) {
      // A fragment for a call that is no longer the open block (never seen from OpenAI) still goes to its index.
      out.push(sig === undefined ? { type: 'tool_call_delta', index: call.block, arguments: args } : { type: 'tool_call_delta', index: call.block, arguments: args, signature: sig, origin: 'gemini' });
    }
  }

  /** The call a delta without `index` belongs to: the latest call, or a new one (the first free index) when it begins another. */
  #unindexedKey(id: unknown, name: unknown): number {
    const latest = this.#lastTool === null ? undefined : this.#tools.get(this.#lastTool);
    if (latest !== undefined && !startsAnother(latest, id, name)) return this.#lastTool!;
    let key = 0;
    while (this.#tools.has(key)) key++;
    return key;
  }

  #startTool(out: CanonicalEvent[], call: ToolCall, json: Json): void {
    if (!this.#started) this.#start(out, json);
    this.#closeOpen(out);
    call.block = this.#next++;
    this.#open = { kind: 'tool', index: call.block };
    const sig = call.signature;
    out.push(sig === undefined ? { type: 'tool_call_start', index: call.block, id: call.id, name: call.name } : { type: 'tool_call_start', index: call.block, id: call.id, name: call.name, signature: sig, origin: 'gemini' });
    if (call.pending !== '') out.push({ type: 'tool_call_delta', index: call.block, arguments: call.pending });
    call.pending = '';
  }

  /** Close the open block; calls that never got a name are started now with what they have. */
  #closeAll(): CanonicalEvent[] {
    const out: CanonicalEvent[] = [];
    for (const call of this.#tools.values()) if (call.block === null) this.#startTool(out, call, {});
    this.#closeOpen(out);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Renderer
// ---------------------------------------------------------------------------------------------------------------

export interface OpenAIChatRendererOptions {
  /** The client sent stream_options.include_usage: true. Only then is a usage chunk sent, and `usage: null` on
   * every other chunk, as OpenAI does. */
  readonly includeUsage: boolean;
  /** Unix seconds for `created` (codecs have no clock); 0 when not given. */
  readonly created?: number;
  /** The gateway's request id, for error events (errors.ts errorBody shape); null when not given. */
  readonly requestId?: string | null;
}

/**
 * Canonical events -> `chat.completion.chunk` SSE for a client: a role chunk first (with the first output, not at the
 * upstream's start), one chunk per delta, a finish
 * chunk; end() adds the usage chunk (`choices: []`) when asked for and reported, then `data: [DONE]`. error()
 * sends one `{"error": ...}` event and nothing after it (no [DONE]). Reasoning goes out as `reasoning_content`. A
 * call's Gemini signature goes out as `extra_content.google.thought_signature` on its first delta, as Google sends it
 * (one that came after the call started, on the delta that brought it). A call marked custom goes out whole at its
 * block_stop, as `{type: 'custom', custom: {name, input}}`.
 */
export function createOpenAIChatRenderer(model: string, opts: OpenAIChatRendererOptions): StreamRenderer {
  const created = opts.created ?? 0;
  let id = '';
  let roleSent = false;
  let closed = false;
  let usage: Usage | null = null;
  /** Canonical block index -> the tool call's position in the answer (its Chat Completions `index`). */
  const toolIndex = new Map<number, number>();
  /** Calls of custom tools by block index: sent whole at their block_stop, the input being their arguments' `input`. */
  const customCalls = new Map<number, { i: number; id: string; name: string; args: string }>();

  const chunk = (delta: Json, finish: string | null = null): string => {
    const c: Json = { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
    if (opts.includeUsage) c.usage = null;
    return formatFrame(JSON.stringify(c));
  };
  /** The role chunk, if not sent yet, before the chunk `s`. */
  const withRole = (s: string): string => {
    if (roleSent) return s;
    roleSent = true;
    return chunk({ role: 'assistant', content: '', refusal: null }) + s;
  };

  const renderer: StreamRenderer = {
    event(e: CanonicalEvent): string {
      if (closed) return '';
      switch (e.type) {
        case 'start':
          // The role chunk waits for the first output (withRole), as Anthropic's message_start waits: sent now, a
          // combo's stream would open on it, and a member that fails right after its start could not fall back.
          id = e.id;
          return '';
        case 'text_delta':
          return e.text === '' ? '' : withRole(chunk({ content: e.text }));
        case 'reasoning_delta':
          return e.text === '' ? '' : withRole(chunk({ reasoning_content: e.text }));
        case 'tool_call_start': {
          const i = toolIndex.size;
          toolIndex.set(e.index, i);
          if (e.custom === true) {
            customCalls.set(e.index, { i, id: e.id, name: e.name, args: '' });
            return '';
          }
          const extra = e.origin === 'gemini' && e.signature !== undefined ? googleExtra(e.signature) : {};
          return withRole(chunk({ tool_calls: [{ index: i, id: e.id, type: 'function', function: { name: e.name, arguments: '' }, ...extra }] }));
        }
        case 'tool_call_delta': {
          const custom = customCalls.get(e.index);
          if (custom !== undefined) {
            custom.args += e.arguments;
            return '';
          }
          const i = toolIndex.get(e.index);
          const extra = e.origin === 'gemini' && e.signature !== undefined ? googleExtra(e.signature) : null;
          if (i === undefined || (e.arguments === '' && extra === null)) return '';
          return chunk({ tool_calls: [{ index: i, function: { arguments: e.arguments }, ...extra }] });
        }
        case 'block_stop': {
          const c = customCalls.get(e.index);
          return c === undefined ? '' : withRole(chunk({ tool_calls: [{ index: c.i, ...chatCustomCall(c.id, c.name, c.args) }] }));
        }
        case 'usage':
          usage = e.usage;
          return '';
        case 'finish':
          return withRole(chunk({}, finishReasonOf(e.stopReason)));
        case 'error':
          return renderer.error(e.code ?? 'TOLLGATE_ERR_UPSTREAM_PROTOCOL', e.message);
        default:
          // text_start, reasoning_start, reasoning_signature: nothing to say in this format
          return '';
      }
    },

    end(): string {
      if (closed) return '';
      closed = true;
      let s = withRole('');
      if (opts.includeUsage && usage !== null) {
        s += formatFrame(JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: renderUsage(usage) }));
      }
      return s + formatFrame('[DONE]');
    },

    error(code: string, message: string): string {
      if (closed) return '';
      closed = true;
      const type = code in ERRORS ? ERRORS[code as ErrorCode].type : 'upstream_error';
      return formatFrame(JSON.stringify({ error: { code, message, type, param: null, request_id: opts.requestId ?? null } }));
    },
  };
  return renderer;
}
