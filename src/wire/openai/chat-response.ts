// Chat Completions answers <-> the canonical response: parse an upstream `chat.completion` (outbound) and render one
// for a client (inbound). Shared with the stream side: finish reasons, vendor reasoning fields, usage rendering.

import { TollgateError } from '../../core/errors.js';
import type { CanonicalChoice, CanonicalResponse, Part, StopReason, TokenLogprob } from '../canonical.js';
import type { Usage } from '../../ledger/types.js';
import { chatCustomCall } from './chat-tools.js';
import { openaiUsage } from './usage.js';
import { extraOf, signedBy } from './google.js';
import { isObject, type Json } from './chat-validate.js';

/** Chat Completions finish_reason -> canonical. Vendor extras: `sensitive` (GLM), `insufficient_system_resource`
 * (DeepSeek) and `network_error` (GLM) end an answer early; anything else unknown (or null) is a normal end. */
export function stopReasonOf(finish: unknown, refused = false): StopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'content_filter':
    case 'sensitive':
      return 'content_filter';
    case 'insufficient_system_resource':
    case 'network_error':
      return 'error';
    default:
      return refused ? 'refusal' : 'end';
  }
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** Canonical -> finish_reason. A refusal is `stop` (its text is the `refusal` field); an error too, having no name. */
export function finishReasonOf(r: StopReason): FinishReason {
  switch (r) {
    case 'max_tokens':
      return 'length';
    case 'tool_calls':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/**
 * Reasoning text a vendor put on a message or delta: `reasoning_content` (DeepSeek, Qwen, Kimi, GLM, MiniMax),
 * `reasoning` (OpenRouter, vLLM), else the text entries of `reasoning_details` (MiniMax with reasoning_split,
 * OpenRouter). One source only, in that order, so a vendor sending two of them is not counted twice.
 */
export function reasoningOf(m: Json): string {
  if (typeof m.reasoning_content === 'string' && m.reasoning_content !== '') return m.reasoning_content;
  if (typeof m.reasoning === 'string' && m.reasoning !== '') return m.reasoning;
  if (Array.isArray(m.reasoning_details)) {
    return m.reasoning_details.map((d) => (isObject(d) && typeof d.text === 'string' && (d.type === undefined || d.type === 'reasoning.text') ? d.text : '')).join('');
  }
  return '';
}

/**
 * Canonical usage -> Chat Completions usage: prompt_tokens = input + cached + cache write (OpenAI has no cache-write
 * bucket; those tokens were read as input), completion_tokens = output + reasoning. The details objects are sent
 * only for buckets that were reported, and the audio parts (`audio_tokens`) only when there are some, so openaiUsage
 * reads back the same buckets (cache write folds into input).
 */
export function renderUsage(u: Usage): Json {
  const prompt = (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0);
  const completion = (u.output ?? 0) + (u.reasoning ?? 0);
  const out: Json = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (u.cached !== null || u.audioInput !== undefined) out.prompt_tokens_details = details('cached_tokens', u.cached, u.audioInput);
  if (u.reasoning !== null || u.audioOutput !== undefined) out.completion_tokens_details = details('reasoning_tokens', u.reasoning, u.audioOutput);
  return out;
}

/** A `*_tokens_details` object: its reported count (cached or reasoning) and its audio part, each when known. */
function details(key: string, count: number | null, audio: number | undefined): Json {
  const d: Json = count === null ? {} : { [key]: count };
  if (audio !== undefined) d.audio_tokens = audio;
  return d;
}

/** The vLLM-style `stop_reason` of a choice: the stop string that ended the answer, when it says so. */
export function stopSequenceOf(choice: Json): string | undefined {
  return typeof choice.stop_reason === 'string' && choice.stop_reason !== '' ? choice.stop_reason : undefined;
}

/** Chat Completions `logprobs.content` entries -> canonical token logprobs; undefined when there are none. */
export function parseChatLogprobs(raw: unknown): TokenLogprob[] | undefined {
  if (!isObject(raw) || !Array.isArray(raw.content)) return undefined;
  const out = raw.content.flatMap((e): TokenLogprob[] => (isObject(e) && typeof e.token === 'string' && typeof e.logprob === 'number' ? [tokenLogprob(e)] : []));
  return out.length > 0 ? out : undefined;
}

function bytesOf(v: unknown): number[] | undefined {
  return Array.isArray(v) && v.every((b) => typeof b === 'number') ? (v as number[]) : undefined;
}

function tokenLogprob(e: Json): TokenLogprob {
  const top = Array.isArray(e.top_logprobs)
    ? e.top_logprobs.flatMap((t) => {
        if (!isObject(t) || typeof t.token !== 'string' || typeof t.logprob !== 'number') return [];
        const bytes = bytesOf(t.bytes);
        return [bytes === undefined ? { token: t.token, logprob: t.logprob } : { token: t.token, logprob: t.logprob, bytes }];
      })
    : [];
  const bytes = bytesOf(e.bytes);
  return { token: e.token as string, logprob: e.logprob as number, ...(bytes === undefined ? {} : { bytes }), top };
}

/** Canonical token logprobs -> Chat Completions `logprobs` (null when there are none). */
export function renderChatLogprobs(lps: readonly TokenLogprob[] | undefined): Json | null {
  if (lps === undefined || lps.length === 0) return null;
  const entry = (t: { token: string; logprob: number; bytes?: readonly number[] }): Json => ({ token: t.token, logprob: t.logprob, bytes: t.bytes === undefined ? null : [...t.bytes] });
  return { content: lps.map((t) => ({ ...entry(t), top_logprobs: t.top.map(entry) })), refusal: null };
}

/** One upstream choice -> its canonical answer. */
function parseChoice(choice: Json, id: string): CanonicalChoice {
  const msg = isObject(choice.message) ? choice.message : {};
  const content: Part[] = [];
  const reasoning = reasoningOf(msg);
  if (reasoning !== '') content.push({ type: 'reasoning', text: reasoning });
  if (typeof msg.content === 'string' && msg.content !== '') content.push({ type: 'text', text: msg.content });
  const refused = typeof msg.refusal === 'string' && msg.refusal !== '';
  if (refused) content.push({ type: 'text', text: msg.refusal as string });
  if (Array.isArray(msg.tool_calls)) {
    for (const tc of msg.tool_calls) {
      if (!isObject(tc) || !isObject(tc.function)) continue;
      const f = tc.function;
      content.push({
        type: 'tool_call',
        id: typeof tc.id === 'string' ? tc.id : '',
        name: typeof f.name === 'string' ? f.name : '',
        arguments: typeof f.arguments === 'string' ? f.arguments : '',
        ...signedBy(tc),
      });
    }
  }
  if (isObject(msg.function_call)) {
    const f = msg.function_call;
    content.push({ type: 'tool_call', id: `${id}-function_call`, name: typeof f.name === 'string' ? f.name : '', arguments: typeof f.arguments === 'string' ? f.arguments : '' });
  }
  const stopReason = stopReasonOf(choice.finish_reason, refused);
  const stopSequence = choice.finish_reason === 'stop' ? stopSequenceOf(choice) : undefined;
  const logprobs = parseChatLogprobs(choice.logprobs);
  return {
    content,
    stopReason: stopSequence !== undefined ? 'stop_sequence' : stopReason,
    ...(stopSequence !== undefined ? { stopSequence } : {}),
    ...(logprobs === undefined ? {} : { logprobs }),
  };
}

/**
 * A whole upstream `chat.completion` -> canonical. choices[0] is the answer; later choices (n > 1) are
 * `moreChoices`. Content order: reasoning, text (and a refusal as text, with stop reason `refusal`), tool calls.
 * A legacy `function_call` becomes a tool call whose id is `<response id>-function_call`. Token logprobs are read
 * from `logprobs.content`. A tool call's `extra_content.google.thought_signature` (Google's OpenAI-compatible
 * endpoint) is its Gemini signature.
 */
export function parseChatResponse(json: unknown): CanonicalResponse {
  const fail = (what: string) => new TollgateError('TOLLGATE_ERR_UPSTREAM_PROTOCOL', `the upstream answer is not a chat completion: ${what}`);
  if (!isObject(json)) throw fail('not a JSON object');
  const choices = Array.isArray(json.choices) ? json.choices.filter(isObject) : [];
  // Choices are in `index` order when the upstream numbers them.
  const ordered = [...choices].sort((a, b) => (typeof a.index === 'number' ? a.index : 0) - (typeof b.index === 'number' ? b.index : 0));
  if (ordered.length === 0) throw fail('no choices[0]');
  const id = typeof json.id === 'string' ? json.id : '';
  const [first, ...rest] = ordered.map((c) => parseChoice(c, id));
  return {
    id,
    model: typeof json.model === 'string' ? json.model : '',
    ...first!,
    usage: openaiUsage(json.usage, json.service_tier),
    ...(rest.length > 0 ? { moreChoices: rest } : {}),
  };
}

/** One canonical answer -> a Chat Completions choice at `index`. */
function renderChoice(c: CanonicalChoice, index: number): Json {
  const text = c.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  const reasoning = c.content.flatMap((p) => (p.type === 'reasoning' && !p.redacted ? [p.text] : [])).join('');
  const calls = c.content.flatMap((p) => (p.type !== 'tool_call' ? [] : [p.custom === true ? chatCustomCall(p.id, p.name, p.arguments) : { id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments }, ...extraOf(p) }]));
  const refusal = c.stopReason === 'refusal';
  const message: Json = {
    role: 'assistant',
    content: refusal || (text === '' && calls.length > 0) ? null : text,
    refusal: refusal ? text : null,
  };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return { index, message, logprobs: renderChatLogprobs(c.logprobs), finish_reason: finishReasonOf(c.stopReason) };
}

/**
 * Canonical -> the client's `chat.completion`. `model` is the name the client asked for; `created` (Unix seconds)
 * comes from the caller, codecs having no clock (0 when not given). Text parts are joined into `content`
 * (into `refusal` when the stop reason is `refusal`); reasoning is sent as `reasoning_content`, the field
 * OpenAI-compatible clients read; signatures and opaque reasoning are dropped, except a tool call's Gemini signature,
 * sent as `extra_content.google.thought_signature` as Google's OpenAI-compatible endpoint sends it (a Chat client
 * can then send it back to Gemini). Each of `moreChoices` is one more
 * choice; token logprobs go in each choice's `logprobs.content`.
 */
export function renderChatResponse(res: CanonicalResponse, model: string, created = 0): Json {
  const out: Json = {
    id: res.id,
    object: 'chat.completion',
    created,
    model,
    choices: [res, ...(res.moreChoices ?? [])].map(renderChoice),
  };
  if (res.usage !== null) out.usage = renderUsage(res.usage);
  return out;
}
