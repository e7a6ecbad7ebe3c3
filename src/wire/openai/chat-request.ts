// A client's Chat Completions body -> the canonical request (inbound), field by field as the `openai` SDK sends
// them. Malformed fields are TOLLGATE_ERR_INVALID_REQUEST naming the field; what the canonical model has no place
// for is dropped (parseChatRequest's comment lists what). Tools, tool_choice and tool calls: chat-tools.ts.

import type { CanonicalRequest, MediaSource, Message, Part, ResponseFormat, ThinkingLevel } from '../canonical.js';
import { parseCacheControl, unknownKeys } from '../fields.js';
import { parseThinkingLevel, parseThinkingSuffix } from '../thinking.js';
import { own } from '../../core/own.js';
import { absent, invalid, isObject, optInt, optNumber, optString, reqString, type Json } from './chat-validate.js';
import { allowedNames, parseToolCall, parseTools, parseToolChoice } from './chat-tools.js';

/** `data:<media type>[;params];base64,<data>` -> its parts; null for anything else. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = /^data:([^;,]*)((?:;[^;,]*)*);base64,(.*)$/s.exec(url);
  if (!m) return null;
  return { mediaType: m[1] || 'application/octet-stream', data: m[3]! };
}

/**
 * A data URL that is not base64 (`data:,hello`, `data:text/plain,a%20b`): its percent-decoded text, as base64, typed
 * as it says (text/plain when it says nothing); null when `url` is no data URL. Taken as base64 as it was, its whole
 * URL reached the provider as a PDF's bytes.
 */
function textDataUrl(url: string, param: string): { mediaType: string; data: string } | null {
  const m = /^data:([^;,]*)(?:;[^,]*)?,(.*)$/s.exec(url);
  if (!m) return null;
  let text: string;
  try {
    text = decodeURIComponent(m[2]!);
  } catch {
    throw invalid(param, `'${param}' is a data URL whose text does not percent-decode`);
  }
  return { mediaType: m[1] || 'text/plain', data: Buffer.from(text, 'utf8').toString('base64') };
}

const AUDIO_MEDIA: Readonly<Record<string, string>> = { wav: 'audio/wav', mp3: 'audio/mpeg' };

// ---------------------------------------------------------------------------------------------------------------
// Inbound: client body -> canonical
// ---------------------------------------------------------------------------------------------------------------

/** Text-only content (system, developer, tool messages): a string or an array of text parts. */
function textContent(v: unknown, param: string): Part[] {
  if (typeof v === 'string') return [{ type: 'text', text: v }];
  if (!Array.isArray(v)) throw invalid(param, `'${param}' must be a string or an array of text parts`);
  return v.map((p, i) => {
    const at = `${param}[${i}]`;
    if (!isObject(p) || p.type !== 'text') throw invalid(`${at}.type`, `'${at}' must be a text part`);
    return withCache({ type: 'text', text: reqString(p.text, `${at}.text`) }, p, at);
  });
}

/**
 * A part with the Anthropic-style `cache_control` marker the client put on it (OpenRouter and LiteLLM accept it on
 * Chat content parts); it reaches Anthropic targets, and is listed as dropped for the others.
 */
function withCache<P extends Part>(part: P, raw: Json, at: string): P {
  const cacheControl = parseCacheControl(raw.cache_control, `${at}.cache_control`);
  return cacheControl === undefined ? part : { ...part, cacheControl };
}

function userPart(p: unknown, at: string): Part {
  if (!isObject(p)) throw invalid(at, `'${at}' must be a content part object`);
  return withCache(userPartOf(p, at), p, at);
}

function userPartOf(p: Json, at: string): Part {
  switch (p.type) {
    case 'text':
      return { type: 'text', text: reqString(p.text, `${at}.text`) };
    case 'image_url': {
      const iu = p.image_url;
      if (!isObject(iu)) throw invalid(`${at}.image_url`, `'${at}.image_url' must be an object`);
      const url = reqString(iu.url, `${at}.image_url.url`);
      const d = parseDataUrl(url);
      const source: MediaSource = d ? { kind: 'base64', mediaType: d.mediaType, data: d.data } : { kind: 'url', url };
      const detail = iu.detail;
      if (absent(detail)) return { type: 'image', source };
      if (detail !== 'low' && detail !== 'high' && detail !== 'auto') throw invalid(`${at}.image_url.detail`, `'${at}.image_url.detail' must be low, high or auto`);
      return { type: 'image', source, detail };
    }
    case 'input_audio': {
      const a = p.input_audio;
      if (!isObject(a)) throw invalid(`${at}.input_audio`, `'${at}.input_audio' must be an object`);
      const data = reqString(a.data, `${at}.input_audio.data`);
      const format = reqString(a.format, `${at}.input_audio.format`);
      return { type: 'audio', source: { kind: 'base64', mediaType: own(AUDIO_MEDIA, format) ?? `audio/${format}`, data } };
    }
    case 'file': {
      const f = p.file;
      if (!isObject(f)) throw invalid(`${at}.file`, `'${at}.file' must be an object`);
      const filename = optString(f.filename, `${at}.file.filename`);
      const fileId = optString(f.file_id, `${at}.file.file_id`);
      const fileData = optString(f.file_data, `${at}.file.file_data`);
      let source: MediaSource;
      if (fileData !== undefined) {
        // A data URL; bare base64 is taken as a PDF, the only file type Chat Completions reads.
        const d = parseDataUrl(fileData) ?? textDataUrl(fileData, `${at}.file.file_data`);
        source = d ? { kind: 'base64', mediaType: d.mediaType, data: d.data } : { kind: 'base64', mediaType: 'application/pdf', data: fileData };
      } else if (fileId !== undefined) {
        source = { kind: 'file_id', id: fileId, origin: 'openai' };
      } else {
        throw invalid(`${at}.file`, `'${at}.file' needs file_data or file_id`);
      }
      return filename === undefined ? { type: 'file', source } : { type: 'file', source, filename };
    }
    default:
      throw invalid(`${at}.type`, `'${at}.type' ${JSON.stringify(p.type)} is not a supported content part`);
  }
}

function assistantMessage(m: Json, at: string, names: Map<string, string>): Message {
  const content: Part[] = [];
  // Vendor reasoning (DeepSeek, Qwen, Kimi, GLM: reasoning_content; OpenRouter, vLLM: reasoning) comes first.
  const reasoning = typeof m.reasoning_content === 'string' ? m.reasoning_content : typeof m.reasoning === 'string' ? m.reasoning : '';
  if (reasoning !== '') content.push({ type: 'reasoning', text: reasoning });
  const c = m.content;
  if (typeof c === 'string') {
    if (c !== '') content.push({ type: 'text', text: c });
  } else if (Array.isArray(c)) {
    c.forEach((p, i) => {
      const pat = `${at}.content[${i}]`;
      if (!isObject(p)) throw invalid(pat, `'${pat}' must be a content part object`);
      if (p.type === 'text') content.push(withCache({ type: 'text', text: reqString(p.text, `${pat}.text`) }, p, pat));
      else if (p.type === 'refusal') content.push({ type: 'text', text: reqString(p.refusal, `${pat}.refusal`) });
      else throw invalid(`${pat}.type`, `'${pat}.type' must be text or refusal`);
    });
  } else if (!absent(c)) {
    throw invalid(`${at}.content`, `'${at}.content' must be a string, an array of parts or null`);
  }
  const refusal = optString(m.refusal, `${at}.refusal`);
  if (refusal) content.push({ type: 'text', text: refusal });
  if (!absent(m.tool_calls)) {
    if (!Array.isArray(m.tool_calls)) throw invalid(`${at}.tool_calls`, `'${at}.tool_calls' must be an array`);
    m.tool_calls.forEach((tc, i) => {
      const call = parseToolCall(tc, `${at}.tool_calls[${i}]`);
      names.set(call.id, call.name);
      content.push(call);
    });
  }
  return { role: 'assistant', content };
}

function toolResult(m: Json, at: string, names: Map<string, string>): Part {
  const callId = reqString(m.tool_call_id, `${at}.tool_call_id`);
  const content = textContent(m.content, `${at}.content`);
  const name = names.get(callId);
  return name === undefined ? { type: 'tool_result', callId, content } : { type: 'tool_result', callId, name, content };
}

function parseMessages(raw: unknown[]): { system: Part[]; messages: Message[] } {
  const system: Part[] = [];
  const messages: Message[] = [];
  /** Tool call id -> function name, so a tool result carries the name (Gemini needs it). */
  const names = new Map<string, string>();
  raw.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw invalid(at, `'${at}' must be an object`);
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...textContent(m.content, `${at}.content`));
        break;
      case 'user': {
        const c = m.content;
        if (typeof c === 'string') messages.push({ role: 'user', content: [{ type: 'text', text: c }] });
        else if (Array.isArray(c)) messages.push({ role: 'user', content: c.map((p, j) => userPart(p, `${at}.content[${j}]`)) });
        else throw invalid(`${at}.content`, `'${at}.content' must be a string or an array of parts`);
        break;
      }
      case 'assistant':
        messages.push(assistantMessage(m, at, names));
        break;
      case 'tool': {
        // Consecutive tool messages answer one assistant turn: one canonical user message of tool results.
        const part = toolResult(m, at, names);
        const last = messages.at(-1);
        if (last && last.role === 'user' && last.content.length > 0 && last.content.every((p) => p.type === 'tool_result')) {
          messages[messages.length - 1] = { role: 'user', content: [...last.content, part] };
        } else {
          messages.push({ role: 'user', content: [part] });
        }
        break;
      }
      default:
        throw invalid(`${at}.role`, `'${at}.role' ${JSON.stringify(m.role)} is not supported (system, developer, user, assistant, tool)`);
    }
  });
  return { system, messages };
}

function parseResponseFormat(v: unknown): ResponseFormat {
  if (isObject(v)) {
    if (v.type === 'text' || v.type === 'json_object') return { type: v.type };
    if (v.type === 'json_schema' && isObject(v.json_schema)) {
      const js = v.json_schema;
      const name = reqString(js.name, 'response_format.json_schema.name');
      const schema = absent(js.schema) ? {} : js.schema;
      if (!isObject(schema)) throw invalid('response_format.json_schema.schema', "'response_format.json_schema.schema' must be an object");
      return typeof js.strict === 'boolean' ? { type: 'json_schema', name, schema, strict: js.strict } : { type: 'json_schema', name, schema };
    }
  }
  throw invalid('response_format', "'response_format' must be {type: text | json_object | json_schema}");
}

function parseStop(v: unknown): string[] | undefined {
  if (absent(v)) return undefined;
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return v as string[];
  throw invalid('stop', "'stop' must be a string or an array of strings");
}

function parseLogitBias(v: unknown): Record<string, number> | undefined {
  if (absent(v)) return undefined;
  if (!isObject(v) || !Object.values(v).every((b) => typeof b === 'number' && Number.isFinite(b))) throw invalid('logit_bias', "'logit_bias' must be an object of token ids to numbers");
  return v as Record<string, number>;
}

/** `prediction: {type: 'content', content: string | text parts}` -> its text. */
function parsePrediction(v: unknown): string | undefined {
  if (absent(v)) return undefined;
  if (!isObject(v) || v.type !== 'content') throw invalid('prediction', "'prediction' must be {type: 'content', content}");
  return textContent(v.content, 'prediction.content').map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/** Every top-level key parseChatRequest reads; any other key the client sets is listed as dropped. */
const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'model', 'messages', 'stream', 'stream_options', 'n', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_tokens', 'max_completion_tokens',
  'temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'seed', 'stop', 'response_format', 'reasoning_effort', 'user',
  'safety_identifier', 'metadata', 'logprobs', 'top_logprobs', 'logit_bias', 'prediction', 'prompt_cache_key', 'service_tier', 'store',
]);

function parseMetadata(v: unknown): Record<string, string> | undefined {
  if (absent(v)) return undefined;
  if (!isObject(v) || !Object.values(v).every((s) => typeof s === 'string')) throw invalid('metadata', "'metadata' must be an object of strings");
  return v as Record<string, string>;
}

/**
 * A Chat Completions body -> the canonical request. The model's `(level)` suffix is removed and wins over the
 * body's `reasoning_effort`. `safety_identifier` names the end user when `user` does not. Not carried, and listed
 * in `unmapped` (so in the dropped-parameters header): message `name`s, an assistant message's `audio` (a reference
 * to an earlier audio answer), `store: true`, and every top-level key not read here (audio output, modalities,
 * web_search_options, verbosity, vendor extensions such as top_k, ...).
 * stream_options is read by the pipeline (`include_usage`).
 */
export function parseChatRequest(body: unknown): CanonicalRequest {
  if (!isObject(body)) throw invalid('body', 'request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model', "'model' is required and must be a non-empty string");
  if (!Array.isArray(body.messages)) throw invalid('messages', "'messages' is required and must be an array");
  if (!absent(body.stream) && typeof body.stream !== 'boolean') throw invalid('stream', "'stream' must be a boolean");
  const n = optInt(body, 'n', 1);

  const { model, thinking: suffix } = parseThinkingSuffix(body.model);
  const { system, messages } = parseMessages(body.messages);
  const req: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = { model, system, messages, stream: body.stream === true };

  if (!absent(body.tools)) req.tools = parseTools(body.tools);
  if (!absent(body.tool_choice)) {
    req.toolChoice = parseToolChoice(body.tool_choice);
    const allowed = allowedNames(body.tool_choice);
    if (allowed !== null && req.tools !== undefined) req.tools = req.tools.filter((t) => allowed.has(t.name));
  }
  if (typeof body.parallel_tool_calls === 'boolean') req.parallelToolCalls = body.parallel_tool_calls;
  else if (!absent(body.parallel_tool_calls)) throw invalid('parallel_tool_calls', "'parallel_tool_calls' must be a boolean");
  // max_completion_tokens replaced max_tokens; when both are sent it is the one OpenAI honours.
  const maxTokens = optInt(body, 'max_completion_tokens', 1) ?? optInt(body, 'max_tokens', 1);
  if (maxTokens !== undefined) req.maxTokens = maxTokens;
  const num = (key: string, set: (v: number) => void) => {
    const v = optNumber(body, key);
    if (v !== undefined) set(v);
  };
  num('temperature', (v) => (req.temperature = v));
  num('top_p', (v) => (req.topP = v));
  num('presence_penalty', (v) => (req.presencePenalty = v));
  num('frequency_penalty', (v) => (req.frequencyPenalty = v));
  const seed = optInt(body, 'seed', Number.MIN_SAFE_INTEGER);
  if (seed !== undefined) req.seed = seed;
  const stop = parseStop(body.stop);
  if (stop !== undefined) req.stop = stop;
  if (!absent(body.response_format)) req.responseFormat = parseResponseFormat(body.response_format);

  let thinking: ThinkingLevel | undefined = suffix;
  if (thinking === undefined && !absent(body.reasoning_effort)) {
    const level = typeof body.reasoning_effort === 'string' ? parseThinkingLevel(body.reasoning_effort) : undefined;
    if (level === undefined || level.kind !== 'level' || level.level === 'auto') {
      throw invalid('reasoning_effort', "'reasoning_effort' must be one of none, minimal, low, medium, high, xhigh, max");
    }
    thinking = level;
  }
  if (thinking !== undefined) req.thinking = thinking;

  const user = optString(body.user, 'user') ?? optString(body.safety_identifier, 'safety_identifier');
  if (user !== undefined) req.user = user;
  const metadata = parseMetadata(body.metadata);
  if (metadata !== undefined) req.metadata = metadata;

  if (n !== undefined && n > 1) req.n = n;
  if (!absent(body.logprobs) && typeof body.logprobs !== 'boolean') throw invalid('logprobs', "'logprobs' must be a boolean");
  if (body.logprobs === true) req.logprobs = true;
  const topLogprobs = optInt(body, 'top_logprobs', 0);
  if (topLogprobs !== undefined && topLogprobs > 20) throw invalid('top_logprobs', "'top_logprobs' must be an integer between 0 and 20");
  if (topLogprobs !== undefined && body.logprobs === true) req.topLogprobs = topLogprobs;
  const logitBias = parseLogitBias(body.logit_bias);
  if (logitBias !== undefined) req.logitBias = logitBias;
  const prediction = parsePrediction(body.prediction);
  if (prediction !== undefined) req.prediction = prediction;
  const promptCacheKey = optString(body.prompt_cache_key, 'prompt_cache_key');
  if (promptCacheKey !== undefined) req.promptCacheKey = promptCacheKey;
  const serviceTier = optString(body.service_tier, 'service_tier');
  if (serviceTier !== undefined) req.serviceTier = serviceTier;

  const unmapped = unknownKeys(body, KNOWN_KEYS);
  if (body.store === true) unmapped.push('store');
  if (body.messages.some((m) => isObject(m) && typeof m.name === 'string')) unmapped.push('messages.name');
  // An earlier audio answer, by id: only OpenAI holds it, and the canonical model has no place for it.
  if (body.messages.some((m) => isObject(m) && m.role === 'assistant' && isObject(m.audio))) unmapped.push('messages.audio');
  if (unmapped.length > 0) req.unmapped = unmapped;
  return req;
}
