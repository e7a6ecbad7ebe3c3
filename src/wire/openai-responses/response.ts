// Whole (non-streamed) answers: an upstream Responses object -> CanonicalResponse, and a CanonicalResponse -> the
// Responses object a client's `openai` SDK reads (`output_text` is not sent: the SDK computes it from `output`).
//
// A custom_tool_call item is a tool_call marked custom, its arguments `{"input": ...}`, and renders back as one.
// Stop reasons: completed with a function (or custom tool) call -> tool_calls; completed with a refusal part -> refusal; incomplete
// for max_output_tokens -> max_tokens, for content_filter -> content_filter; failed / cancelled -> error; else end.
// Rendering goes the other way; `stop_sequence` renders as completed (the Responses API has no stop sequences)
// and `refusal` renders the answer's text parts as refusal parts.
//
// The canonical response has no creation time and codecs have no clock, so `created_at` renders as 0.

import { TollgateError } from '../../core/errors.js';
import type { CanonicalResponse, Part, StopReason, TokenLogprob } from '../canonical.js';
import { customCallPart, customInput } from '../custom-tool.js';
import { parseChatLogprobs } from '../openai/chat-response.js';
import type { Usage } from '../../ledger/types.js';
import { arr, callItemId, envelopeOf, idStem, isObj, itemId, type Json, reasoningPart, responseId, str } from './shared.js';
import { renderUsage, responsesUsage } from './usage.js';

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export function stopReasonOf(status: string | undefined, incompleteReason: string | undefined, sawCall: boolean, sawRefusal: boolean): StopReason {
  switch (status) {
    case 'incomplete':
      if (incompleteReason === 'max_output_tokens') return 'max_tokens';
      if (incompleteReason === 'content_filter') return 'content_filter';
      return 'end';
    case 'failed':
    case 'cancelled':
      return 'error';
    default:
      return sawCall ? 'tool_calls' : sawRefusal ? 'refusal' : 'end';
  }
}

/** How a canonical stop reason ends a Responses object. */
export function statusOf(stop: StopReason | null): { status: ResponseStatus; incomplete: 'max_output_tokens' | 'content_filter' | null } {
  if (stop === 'max_tokens') return { status: 'incomplete', incomplete: 'max_output_tokens' };
  if (stop === 'content_filter') return { status: 'incomplete', incomplete: 'content_filter' };
  if (stop === 'error') return { status: 'failed', incomplete: null };
  return { status: 'completed', incomplete: null };
}

export interface ResponseFields {
  readonly id: string;
  readonly model: string;
  readonly status: ResponseStatus;
  readonly output: readonly Json[];
  readonly usage: Usage | null;
  readonly incomplete?: 'max_output_tokens' | 'content_filter' | null;
  readonly error?: { code: string; message: string } | null;
}

/**
 * A Responses object with every field the SDK types mark required. Request echoes the renderer cannot know
 * (instructions, tools, temperature, ...) take the API's neutral values.
 */
export function responseObject(f: ResponseFields): Json {
  return {
    id: f.id,
    object: 'response',
    created_at: 0,
    status: f.status,
    background: false,
    error: f.error ?? null,
    incomplete_details: f.incomplete ? { reason: f.incomplete } : null,
    instructions: null,
    max_output_tokens: null,
    model: f.model,
    output: f.output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: null,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    truncation: 'disabled',
    usage: f.usage === null ? null : renderUsage(f.usage),
    user: null,
    metadata: {},
  };
}

// ---- parse ----------------------------------------------------------------------------------------------------

export function parseResponse(json: unknown): CanonicalResponse {
  if (!isObj(json) || !Array.isArray(json.output)) {
    throw new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', 'the upstream Responses answer has no `output` array');
  }
  const content: Part[] = [];
  const logprobs: TokenLogprob[] = [];
  let sawCall = false;
  let sawRefusal = false;
  for (const item of json.output) {
    if (!isObj(item)) continue;
    if (item.type === 'reasoning') {
      const p = reasoningPart(item);
      if (p) content.push(p);
    } else if (item.type === 'message') {
      for (const c of arr(item.content)) {
        if (!isObj(c)) continue;
        if (c.type === 'output_text' && typeof c.text === 'string') {
          content.push({ type: 'text', text: c.text });
          logprobs.push(...(parseChatLogprobs({ content: c.logprobs }) ?? []));
        }
        else if (c.type === 'refusal' && typeof c.refusal === 'string') {
          content.push({ type: 'text', text: c.refusal });
          sawRefusal = true;
        }
      }
    } else if (item.type === 'function_call') {
      content.push({ type: 'tool_call', id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: str(item.arguments) ?? '' });
      sawCall = true;
    } else if (item.type === 'custom_tool_call') {
      content.push(customCallPart(str(item.call_id) ?? '', str(item.name) ?? '', str(item.input) ?? ''));
      sawCall = true;
    }
  }
  const incomplete = isObj(json.incomplete_details) ? str(json.incomplete_details.reason) : undefined;
  return {
    id: str(json.id) ?? '',
    model: str(json.model) ?? '',
    content,
    stopReason: stopReasonOf(str(json.status), incomplete, sawCall, sawRefusal),
    usage: responsesUsage(json.usage, json.output, json.service_tier),
    ...(logprobs.length > 0 ? { logprobs } : {}),
  };
}

/** Canonical token logprobs as an output_text part's `logprobs` (the Chat Completions entry shape, bytes as arrays). */
function outputLogprobs(lps: readonly TokenLogprob[]): Json[] {
  const entry = (t: { token: string; logprob: number; bytes?: readonly number[] }): Json => ({ token: t.token, logprob: t.logprob, bytes: [...(t.bytes ?? [])] });
  return lps.map((t) => ({ ...entry(t), top_logprobs: t.top.map(entry) }));
}

// ---- render ---------------------------------------------------------------------------------------------------

export const messageItem = (id: string, parts: Json[], status: 'in_progress' | 'completed' | 'incomplete'): Json => ({ id, type: 'message', status, content: parts, role: 'assistant' });
export const outputText = (text: string): Json => ({ type: 'output_text', annotations: [], logprobs: [], text });
export const summaryText = (text: string): Json => ({ type: 'summary_text', text });

export function reasoningItem(id: string, text: string, encryptedContent: string | undefined): Json {
  const item: Json = { id, type: 'reasoning', summary: text === '' ? [] : [summaryText(text)] };
  if (encryptedContent !== undefined) item.encrypted_content = encryptedContent;
  return item;
}

export const functionCallItem = (callId: string, name: string, args: string, status: 'in_progress' | 'completed' | 'incomplete'): Json => ({
  id: callItemId(callId),
  type: 'function_call',
  status,
  arguments: args,
  call_id: callId,
  name,
});

/** A call of a custom tool (its input the `input` of the canonical arguments, src/wire/custom-tool.ts). */
export const customCallItem = (callId: string, name: string, input: string, status: 'in_progress' | 'completed' | 'incomplete'): Json => ({
  id: `ctc_${callId.replace(/^call_/, '')}`,
  type: 'custom_tool_call',
  status,
  call_id: callId,
  name,
  input,
});

/**
 * Canonical content -> output items: consecutive text parts share one message; reasoning and calls are items. The
 * answer's token logprobs go on its first output_text part (the canonical answer does not say which part they cover).
 */
function outputItems(content: readonly Part[], stem: string, refusal: boolean, lastStatus: 'completed' | 'incomplete', logprobs: readonly TokenLogprob[] | undefined): Json[] {
  const items: Json[] = [];
  let texts: Json[] = [];
  let pendingLogprobs = logprobs !== undefined && logprobs.length > 0 ? outputLogprobs(logprobs) : undefined;
  const flush = (): void => {
    if (texts.length > 0) items.push(messageItem(itemId('msg', stem, items.length), texts, 'completed'));
    texts = [];
  };
  for (const p of content) {
    if (p.type === 'text') {
      if (refusal) texts.push({ type: 'refusal', refusal: p.text });
      else {
        texts.push(pendingLogprobs === undefined ? outputText(p.text) : { ...outputText(p.text), logprobs: pendingLogprobs });
        pendingLogprobs = undefined;
      }
    }
    else if (p.type === 'reasoning') {
      const env = envelopeOf(p);
      if (p.text === '' && !env) continue; // e.g. another family's redacted thinking: nothing to show
      flush();
      items.push(reasoningItem(env?.id ?? itemId('rs', stem, items.length), p.text, env?.encryptedContent));
    } else if (p.type === 'tool_call') {
      flush();
      items.push(p.custom === true ? customCallItem(p.id, p.name, customInput(p.arguments), 'completed') : functionCallItem(p.id, p.name, p.arguments, 'completed'));
    }
  }
  flush();
  const last = items.at(-1);
  if (lastStatus === 'incomplete' && last && last.type !== 'reasoning') last.status = 'incomplete';
  return items;
}

export function renderResponse(res: CanonicalResponse, model: string): Json {
  const id = responseId(res.id);
  const { status, incomplete } = statusOf(res.stopReason);
  const output = outputItems(res.content, idStem(id), res.stopReason === 'refusal', status === 'incomplete' ? 'incomplete' : 'completed', res.logprobs);
  return responseObject({
    id,
    model,
    status,
    output,
    usage: res.usage,
    incomplete,
    error: status === 'failed' ? { code: 'server_error', message: 'the upstream model stopped with an error' } : null,
  });
}
