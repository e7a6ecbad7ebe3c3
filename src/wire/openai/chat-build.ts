// Canonical request -> a Chat Completions request for an upstream (outbound): the body, with the path, headers and
// auth of the passthrough adapter. What Chat Completions or the target cannot take is dropped; buildChatRequest's
// comment lists what.

import type { CanonicalRequest, Part, ResponseFormat, ToolChoice } from '../canonical.js';
import { BuildNotes, hasCacheControl, noteChoices, noteStopLimit, withoutForeignFiles } from '../fields.js';
import { applyThinking, isThinkingFamily, thinkingLost, type ThinkingFamily } from '../thinking.js';
import type { BuiltRequest, Target } from '../codec.js';
import { openaiAdapter } from './index.js';
import { isGoogleOpenAIEndpoint, signCalls } from './google.js';
import { own } from '../../core/own.js';

type Json = Record<string, unknown>;

/**
 * The most stop sequences OpenAI Chat takes (`stop`: "Up to 4 sequences", the API reference): OpenAI's own API and
 * Azure OpenAI's. Other OpenAI-format vendors set their own limits (DeepSeek takes 16, a vLLM server any number), so
 * a request to them goes as the client sent it and the vendor answers for itself.
 */
export const MAX_STOP_SEQUENCES = 4;

/** Is `baseUrl` OpenAI's own API (or Azure OpenAI's), where OpenAI's documented limits hold? */
export function isOpenAIItself(baseUrl: string | undefined): boolean {
  if (!baseUrl) return false;
  try {
    const host = new URL(baseUrl).hostname;
    return host === 'api.openai.com' || host.endsWith('.openai.azure.com');
  } catch {
    return false;
  }
}

export const dataUrl = (mediaType: string, data: string): string => `data:${mediaType};base64,${data}`;

/** Families whose vendors read earlier turns' reasoning back as `reasoning_content` (interleaved thinking). */
const SENDS_REASONING_BACK: ReadonlySet<ThinkingFamily> = new Set(['deepseek', 'kimi', 'zai', 'qwen']);

const AUDIO_FORMAT: Readonly<Record<string, 'wav' | 'mp3'>> = {
  'audio/wav': 'wav', 'audio/x-wav': 'wav', 'audio/wave': 'wav', 'audio/mpeg': 'mp3', 'audio/mp3': 'mp3',
};

/** A user content part in Chat Completions form; null when Chat Completions cannot carry it. */
function chatUserPart(p: Part): Json | null {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: p.text };
    case 'image': {
      const s = p.source;
      if (s.kind === 'file_id') return null; // image_url takes a URL only
      const image_url: Json = { url: s.kind === 'url' ? s.url : dataUrl(s.mediaType, s.data) };
      if (p.detail !== undefined) image_url.detail = p.detail;
      return { type: 'image_url', image_url };
    }
    case 'audio': {
      const s = p.source;
      const format = s.kind === 'base64' ? own(AUDIO_FORMAT, s.mediaType.toLowerCase()) : undefined;
      if (s.kind !== 'base64' || format === undefined) return null; // input_audio: base64 wav or mp3 only
      return { type: 'input_audio', input_audio: { data: s.data, format } };
    }
    case 'file': {
      const s = p.source;
      if (s.kind === 'base64') {
        // Chat file parts are PDFs (withoutForeignFiles removed the types nothing here can send): a text file goes
        // as its text, as OpenAI advises, and an image file as an image.
        const type = s.mediaType.toLowerCase();
        if (type.startsWith('text/')) return { type: 'text', text: Buffer.from(s.data, 'base64').toString('utf8') };
        if (type.startsWith('image/')) return { type: 'image_url', image_url: { url: dataUrl(s.mediaType, s.data) } };
      }
      const file: Json = {};
      if (s.kind === 'base64') file.file_data = dataUrl(s.mediaType, s.data);
      else if (s.kind === 'file_id') file.file_id = s.id;
      else return null; // no file URLs in Chat Completions
      if (p.filename !== undefined) file.filename = p.filename;
      return { type: 'file', file };
    }
    default:
      return null;
  }
}

/** Text of a tool result; Chat Completions tool messages carry text only, and no error flag. */
function toolMessage(p: Extract<Part, { type: 'tool_result' }>, notes: BuildNotes): Json {
  const texts = p.content.flatMap((c) => (c.type === 'text' ? [c.text] : []));
  for (const c of p.content) if (c.type === 'image' || c.type === 'file' || c.type === 'audio') notes.drop(c.type);
  if (p.isError === true) notes.drop('toolError');
  return { role: 'tool', tool_call_id: p.callId, content: texts.join('') };
}

/** `google`: the provider is Google's OpenAI-compatible endpoint, which reads Gemini's thought signatures (google.ts). */
function chatMessages(req: CanonicalRequest, family: ThinkingFamily | null, notes: BuildNotes, google: boolean): Json[] {
  const out: Json[] = [];
  for (const p of req.system) if (p.type === 'text') out.push({ role: 'system', content: p.text });
  for (const m of req.messages) {
    if (m.role === 'assistant') {
      const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      const parts = m.content.filter((p) => p.type === 'tool_call');
      const calls: Json[] = parts.map((p) => ({ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }));
      if (google) signCalls(calls, parts);
      const msg: Json = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
      if (calls.length > 0) msg.tool_calls = calls;
      if (family !== null && SENDS_REASONING_BACK.has(family)) {
        const reasoning = m.content.flatMap((p) => (p.type === 'reasoning' && !p.redacted ? [p.text] : [])).join('');
        if (reasoning !== '') msg.reasoning_content = reasoning;
      }
      out.push(msg);
      continue;
    }
    // A user message: tool results become tool messages, the rest user messages, in order.
    let parts: Json[] = [];
    const flush = () => {
      if (parts.length === 0) return;
      const only = parts.length === 1 && parts[0]!.type === 'text' ? (parts[0]!.text as string) : null;
      out.push({ role: 'user', content: only ?? parts });
      parts = [];
    };
    for (const p of m.content) {
      if (p.type === 'tool_result') {
        flush();
        out.push(toolMessage(p, notes));
      } else {
        const cp = chatUserPart(p);
        if (cp) parts.push(cp);
        else if (p.type === 'image' || p.type === 'file' || p.type === 'audio') notes.drop(p.type);
      }
    }
    flush();
  }
  return out;
}

function chatToolChoice(c: Exclude<ToolChoice, { type: 'builtin' }>): unknown {
  return c.type === 'tool' ? { type: 'function', function: { name: c.name } } : c.type;
}

function chatResponseFormat(f: ResponseFormat): Json {
  if (f.type !== 'json_schema') return { type: f.type };
  const js: Json = { name: f.name, schema: f.schema };
  if (f.strict !== undefined) js.strict = f.strict;
  return { type: 'json_schema', json_schema: js };
}

/** The thinking family the target uses: its configured one; `openai` for an unlisted model or none configured. */
function familyOf(target: Target): ThinkingFamily | null {
  const m = target.model;
  if (m !== null && !m.capabilities.includes('reasoning')) return null;
  return isThinkingFamily(m?.thinking) ? m.thinking : 'openai';
}

/** The thinking parameters, placed where a Chat Completions endpoint of that family reads them. */
function thinkingFields(req: CanonicalRequest, target: Target, family: ThinkingFamily | null): Json {
  if (req.thinking === undefined || family === null) return {};
  switch (family) {
    case 'openai':
    case 'gemini-budget':
    case 'gemini-level': {
      // Gemini's OpenAI-compatible endpoint maps reasoning_effort to its own budgets and levels.
      const { effort } = applyThinking('openai', req.thinking, target.model, req.maxTokens);
      return effort === undefined ? {} : { reasoning_effort: effort };
    }
    default:
      return { ...applyThinking(family, req.thinking, target.model, req.maxTokens) };
  }
}

/**
 * The canonical request -> a Chat Completions request for `target`. Path, headers and auth are the existing
 * adapter's (`openaiAdapter.chatRequest`), which also asks a stream for usage (stream_options.include_usage).
 * max_completion_tokens is sent to models with the `reasoning` capability (OpenAI's reasoning models reject
 * max_tokens), max_tokens to every other model (what most compatible vendors read). Carried besides the
 * conversation: n (whole answers only), logprobs / top_logprobs, logit_bias, prediction, prompt_cache_key,
 * service_tier (OpenAI's values; Anthropic's standard_only is dropped), user, metadata.
 * Dropped and listed (BuildNotes): top_k (not a Chat Completions parameter), cache_control markers, built-in web
 * search (a forced one is refused), parts Chat Completions cannot carry (image file ids, audio other than base64
 * wav/mp3, file URLs, files other than PDF, text or image, non-text tool results, another family's files), a tool
 * result's error flag, a thinking level the model cannot take (listed without `reasoning`, or no room for a
 * budget). Dropped without a listing: reasoning except for families that read it back, tool_choice /
 * parallel_tool_calls without tools (OpenAI rejects them; with no tool they say nothing). A text file is sent as
 * text, an image file as an image_url. Gemini's thought signatures on tool calls go as `extra_content` to Google's
 * OpenAI-compatible endpoint only (by the base_url's host: google.ts), where the first call of a turn without one gets
 * Google's placeholder; any other provider gets no `extra_content`.
 */
export function buildChatRequest(asked: CanonicalRequest, target: Target): BuiltRequest {
  const notes = new BuildNotes();
  const req = withoutForeignFiles(asked, 'openai', notes);
  const family = familyOf(target);
  const google = isGoogleOpenAIEndpoint(target.provider.base_url);
  const body: Json & { model: string; messages: unknown[] } = { model: target.modelId, messages: chatMessages(req, family, notes, google) };
  noteChoices(req, notes, 'an OpenAI Chat', true);
  if (req.n !== undefined && req.n > 1) body.n = req.n;
  if (hasCacheControl(req)) notes.drop('cacheControl');
  if (req.builtinTools !== undefined && req.builtinTools.length > 0) notes.drop('webSearch');
  if (req.toolChoice?.type === 'builtin') notes.refuse('toolChoice', 'forces a built-in web search, which an OpenAI Chat provider does not have');
  if (req.tools !== undefined && req.tools.length > 0) {
    body.tools = req.tools.map((t) => {
      const fn: Json = { name: t.name };
      if (t.description !== undefined) fn.description = t.description;
      fn.parameters = t.parameters;
      if (t.strict !== undefined) fn.strict = t.strict;
      return { type: 'function', function: fn };
    });
    if (req.toolChoice !== undefined && req.toolChoice.type !== 'builtin') body.tool_choice = chatToolChoice(req.toolChoice);
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.topK !== undefined) notes.drop('topK');
  if (req.maxTokens !== undefined) {
    body[target.model?.capabilities.includes('reasoning') ? 'max_completion_tokens' : 'max_tokens'] = req.maxTokens;
  }
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.stop !== undefined && req.stop.length > 0) body.stop = [...req.stop];
  if (isOpenAIItself(target.provider.base_url)) noteStopLimit(req, notes, { limit: MAX_STOP_SEQUENCES, format: 'an OpenAI Chat' });
  if (req.seed !== undefined) body.seed = req.seed;
  if (req.presencePenalty !== undefined) body.presence_penalty = req.presencePenalty;
  if (req.frequencyPenalty !== undefined) body.frequency_penalty = req.frequencyPenalty;
  if (req.responseFormat !== undefined) body.response_format = chatResponseFormat(req.responseFormat);
  const thinking = thinkingFields(req, target, family);
  if (thinkingLost(req.thinking, thinking, { reasons: family !== null })) notes.drop('thinking');
  Object.assign(body, thinking);
  if (req.user !== undefined) body.user = req.user;
  if (req.metadata !== undefined) body.metadata = { ...req.metadata };
  if (req.logprobs === true) {
    body.logprobs = true;
    if (req.topLogprobs !== undefined) body.top_logprobs = req.topLogprobs;
  }
  if (req.logitBias !== undefined) body.logit_bias = { ...req.logitBias };
  if (req.prediction !== undefined) body.prediction = { type: 'content', content: req.prediction };
  if (req.promptCacheKey !== undefined) body.prompt_cache_key = req.promptCacheKey;
  if (req.serviceTier !== undefined) {
    if (req.serviceTier === 'standard_only') notes.drop('serviceTier');
    else body.service_tier = req.serviceTier;
  }
  if (req.stream) body.stream = true;
  const refused = notes.refusal;
  return { ...openaiAdapter.chatRequest(target.provider, target.modelId, body, true), dropped: notes.dropped, ...(refused === undefined ? {} : { refused }) };
}
