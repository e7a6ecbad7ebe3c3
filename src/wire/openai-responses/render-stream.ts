// Canonical events -> the Responses SSE stream the `openai` SDK's `responses.stream()` accepts: every frame is
// `event: <type>` + JSON data with `type` and an increasing `sequence_number`, starting at 0.
//
//   response.created (status in_progress), response.in_progress
//   per text block:      output_item.added (message), content_part.added, output_text.delta..., output_text.done,
//                        content_part.done, output_item.done
//   per reasoning block: output_item.added (reasoning), reasoning_summary_part.added, reasoning_summary_text.delta...,
//                        reasoning_summary_text.done, reasoning_summary_part.done, output_item.done
//   per tool call:       output_item.added (function_call), function_call_arguments.delta..., .done, output_item.done
//   per custom tool call (a call marked custom): output_item.added (custom_tool_call, input ''), one
//                        custom_tool_call_input.delta (the `input` of the whole arguments) and .done, output_item.done
//   end():               response.completed (or response.incomplete for max_tokens / content_filter) carrying the
//                        whole response and the last usage seen. Usage may arrive after the finish event (an OpenAI
//                        Chat upstream sends it after the finish chunk), hence the terminal event waits for end().
//
// [DONE]: the Responses API never sends it, so a normal end has none. The failure path follows the gateway spec
// (Events, Responses passthrough): error() and an upstream `error` event give `response.failed` (status failed,
// error {code, message}, the output so far) followed by one `data: [DONE]`; so does end() after a finish with
// stop reason `error`. After the terminal event, everything else renders as ''.

import { formatFrame } from '../sse.js';
import type { CanonicalEvent, StopReason } from '../canonical.js';
import type { Usage } from '../../ledger/types.js';
import type { StreamRenderer } from '../codec.js';
import { customInput } from '../custom-tool.js';
import { customCallItem, functionCallItem, messageItem, outputText, reasoningItem, responseObject, statusOf, summaryText } from './response.js';
import { decodeEnvelope, idStem, itemId, type Json, responseId } from './shared.js';

type Open =
  | { readonly kind: 'text'; readonly o: number; readonly id: string; text: string }
  | { readonly kind: 'reasoning'; readonly o: number; readonly id: string; text: string; partOpen: boolean; encrypted?: string }
  | { readonly kind: 'tool'; readonly o: number; readonly id: string; readonly callId: string; readonly name: string; text: string; readonly custom: boolean };

export class ResponsesStreamRenderer implements StreamRenderer {
  readonly #model: string;
  #id = 'resp_tollgate';
  #seq = 0;
  #created = false;
  #done = false;
  readonly #open = new Map<number, Open>();
  /** Output items by output index: the in-progress snapshot while open, the final item once done. */
  readonly #output: Json[] = [];
  #usage: Usage | null = null;
  #stop: StopReason | null = null;

  constructor(model: string) {
    this.#model = model;
  }

  event(e: CanonicalEvent): string {
    if (this.#done) return '';
    switch (e.type) {
      case 'start':
        if (!this.#created) this.#id = responseId(e.id);
        return this.#ensureCreated();
      case 'text_start':
        return this.#ensureCreated() + this.#openText(e.index);
      case 'text_delta': {
        let s = this.#ensureCreated();
        if (!this.#open.has(e.index)) s += this.#openText(e.index);
        const b = this.#open.get(e.index)!;
        if (b.kind !== 'text' || e.text === '') return s;
        b.text += e.text;
        return s + this.#frame('response.output_text.delta', { item_id: b.id, output_index: b.o, content_index: 0, delta: e.text, logprobs: [] });
      }
      case 'reasoning_start':
        return this.#ensureCreated() + this.#openReasoning(e.index);
      case 'reasoning_delta': {
        let s = this.#ensureCreated();
        if (!this.#open.has(e.index)) s += this.#openReasoning(e.index);
        const b = this.#open.get(e.index)!;
        if (b.kind !== 'reasoning' || e.text === '') return s;
        if (!b.partOpen) {
          b.partOpen = true;
          s += this.#frame('response.reasoning_summary_part.added', { item_id: b.id, output_index: b.o, summary_index: 0, part: summaryText('') });
        }
        b.text += e.text;
        return s + this.#frame('response.reasoning_summary_text.delta', { item_id: b.id, output_index: b.o, summary_index: 0, delta: e.text });
      }
      case 'reasoning_signature': {
        const b = this.#open.get(e.index);
        const env = decodeEnvelope(e.signature);
        if (b?.kind === 'reasoning' && env) b.encrypted = env.encryptedContent;
        return '';
      }
      case 'tool_call_start': {
        const s = this.#ensureCreated();
        if (this.#open.has(e.index)) return s;
        const o = this.#output.length;
        const custom = e.custom === true;
        const item = custom ? customCallItem(e.id, e.name, '', 'in_progress') : functionCallItem(e.id, e.name, '', 'in_progress');
        this.#open.set(e.index, { kind: 'tool', o, id: item.id as string, callId: e.id, name: e.name, text: '', custom });
        this.#output.push(item);
        return s + this.#frame('response.output_item.added', { output_index: o, item });
      }
      case 'tool_call_delta': {
        const b = this.#open.get(e.index);
        if (b?.kind !== 'tool' || e.arguments === '') return '';
        b.text += e.arguments;
        // A custom call's input is the `input` of its whole arguments: sent once they are (at its close).
        if (b.custom) return '';
        return this.#frame('response.function_call_arguments.delta', { item_id: b.id, output_index: b.o, delta: e.arguments });
      }
      case 'block_stop':
        return this.#close(e.index);
      case 'usage':
        this.#usage = e.usage;
        return '';
      case 'finish':
        this.#stop = e.stopReason;
        return '';
      case 'error':
        return this.error(e.code ?? 'upstream_error', e.message);
    }
  }

  end(): string {
    if (this.#done) return '';
    let s = this.#ensureCreated();
    for (const index of [...this.#open.keys()]) s += this.#close(index);
    this.#done = true;
    const { status, incomplete } = statusOf(this.#stop);
    const error = status === 'failed' ? { code: 'server_error', message: 'the upstream model stopped with an error' } : null;
    const response = responseObject({ id: this.#id, model: this.#model, status, output: this.#output, usage: this.#usage, incomplete, error });
    if (status === 'failed') return s + this.#frame('response.failed', { response }) + 'data: [DONE]\n\n';
    return s + this.#frame(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  error(code: string, message: string): string {
    if (this.#done) return '';
    const s = this.#ensureCreated();
    this.#done = true;
    // The output so far: open items as they stand, marked incomplete.
    const output = [...this.#output];
    for (const b of this.#open.values()) output[b.o] = this.#item(b, 'incomplete');
    const response = responseObject({ id: this.#id, model: this.#model, status: 'failed', output, usage: this.#usage, error: { code, message } });
    return s + this.#frame('response.failed', { response }) + 'data: [DONE]\n\n';
  }

  #frame(type: string, payload: Json): string {
    return formatFrame(JSON.stringify({ type, sequence_number: this.#seq++, ...payload }), type);
  }

  #ensureCreated(): string {
    if (this.#created) return '';
    this.#created = true;
    const response = responseObject({ id: this.#id, model: this.#model, status: 'in_progress', output: [], usage: null });
    return this.#frame('response.created', { response }) + this.#frame('response.in_progress', { response });
  }

  #openText(index: number): string {
    if (this.#open.has(index)) return '';
    const o = this.#output.length;
    const id = itemId('msg', idStem(this.#id), o);
    this.#open.set(index, { kind: 'text', o, id, text: '' });
    const item = messageItem(id, [], 'in_progress');
    this.#output.push(item);
    return this.#frame('response.output_item.added', { output_index: o, item }) + this.#frame('response.content_part.added', { item_id: id, output_index: o, content_index: 0, part: outputText('') });
  }

  #openReasoning(index: number): string {
    if (this.#open.has(index)) return '';
    const o = this.#output.length;
    const id = itemId('rs', idStem(this.#id), o);
    this.#open.set(index, { kind: 'reasoning', o, id, text: '', partOpen: false });
    const item = reasoningItem(id, '', undefined);
    this.#output.push(item);
    return this.#frame('response.output_item.added', { output_index: o, item });
  }

  #close(index: number): string {
    const b = this.#open.get(index);
    if (!b) return '';
    this.#open.delete(index);
    let s = '';
    if (b.kind === 'text') {
      s += this.#frame('response.output_text.done', { item_id: b.id, output_index: b.o, content_index: 0, text: b.text, logprobs: [] });
      s += this.#frame('response.content_part.done', { item_id: b.id, output_index: b.o, content_index: 0, part: outputText(b.text) });
    } else if (b.kind === 'reasoning') {
      if (b.partOpen) {
        s += this.#frame('response.reasoning_summary_text.done', { item_id: b.id, output_index: b.o, summary_index: 0, text: b.text });
        s += this.#frame('response.reasoning_summary_part.done', { item_id: b.id, output_index: b.o, summary_index: 0, part: summaryText(b.text) });
      }
    } else if (b.custom) {
      const input = customInput(b.text);
      if (input !== '') s += this.#frame('response.custom_tool_call_input.delta', { item_id: b.id, output_index: b.o, delta: input });
      s += this.#frame('response.custom_tool_call_input.done', { item_id: b.id, output_index: b.o, input });
    } else {
      s += this.#frame('response.function_call_arguments.done', { item_id: b.id, output_index: b.o, name: b.name, arguments: b.text });
    }
    const item = this.#item(b, 'completed');
    this.#output[b.o] = item;
    return s + this.#frame('response.output_item.done', { output_index: b.o, item });
  }

  #item(b: Open, status: 'completed' | 'incomplete'): Json {
    if (b.kind === 'text') return messageItem(b.id, [outputText(b.text)], status);
    if (b.kind === 'reasoning') return reasoningItem(b.id, b.partOpen ? b.text : '', b.encrypted);
    return b.custom ? customCallItem(b.callId, b.name, customInput(b.text), status) : functionCallItem(b.callId, b.name, b.text, status);
  }
}
