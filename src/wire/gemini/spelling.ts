// The Gemini REST API takes the proto field names of a request in lowerCamelCase or in snake_case
// (`system_instruction`, `inline_data: {mime_type, data}`, `function_call`, `generation_config`, ...: Google's own
// curl examples write snake_case). parseGeminiRequest reads lowerCamelCase; camelCaseRequest gives it the body with
// the snake_case names of the request's own structure renamed (a copy of only what holds such a name: a body in
// lowerCamelCase is given as it came), and the client's spelling of each renamed name so that what is listed as
// dropped or refused is named as the client wrote it.
//
// Only the names of the structure are renamed: a function's `parameters` / `parametersJsonSchema`, a response
// schema, a call's `args` and a function response's `response` are user data and travel as written. Keys the
// codec does not read (`safety_settings`, `cached_content`, `code_execution`, ...) keep the client's spelling and
// are listed as dropped under it. Both spellings of one field in one object is a 400 naming it, as Google's
// protobuf JSON parser refuses such a message. The client's body itself is never changed (the same-format
// passthrough sends it byte for byte).

import type { WireCodec } from '../codec.js';
import { invalid, isObj, type Json } from './wire.js';

/** Canonical fields under a Gemini client's names (lowerCamelCase; respelled for a snake_case client). */
export const GEMINI_PARAM_NAMES: WireCodec['paramNames'] = {
  maxTokens: 'generationConfig.maxOutputTokens', temperature: 'generationConfig.temperature', topP: 'generationConfig.topP', topK: 'generationConfig.topK',
  stop: 'generationConfig.stopSequences', seed: 'generationConfig.seed', presencePenalty: 'generationConfig.presencePenalty',
  frequencyPenalty: 'generationConfig.frequencyPenalty', logitBias: 'logit_bias', logprobs: 'generationConfig.responseLogprobs',
  topLogprobs: 'generationConfig.logprobs', n: 'generationConfig.candidateCount', responseFormat: 'generationConfig.responseJsonSchema',
  thinking: 'generationConfig.thinkingConfig', tools: 'tools', toolChoice: 'toolConfig', parallelToolCalls: 'parallel_tool_calls',
  webSearch: 'tools.googleSearch', cacheControl: 'cache_control', promptCacheKey: 'prompt_cache_key', serviceTier: 'service_tier', user: 'user',
  metadata: 'metadata', prediction: 'prediction', image: 'inlineData.image', file: 'inlineData.file', audio: 'inlineData.audio',
  toolError: 'functionResponse.response.error', toolStrict: 'tools.functionDeclarations.strict', imageDetail: 'mediaResolution', toolGrammar: 'tools.custom.format',
};

/**
 * The shape of one message of the request: its fields the codec reads, each with the shape of its value (an object,
 * or the elements of an array) when that is structure too, `null` when the value is a scalar or user data.
 */
interface Shape {
  readonly [camel: string]: Shape | null;
}

const FILE: Shape = { mimeType: null, data: null, fileUri: null, displayName: null };
const PART: Shape = {
  text: null, thought: null, thoughtSignature: null, inlineData: FILE, fileData: FILE,
  functionCall: { id: null, name: null, args: null }, functionResponse: { id: null, name: null, response: null },
};
const CONTENT: Shape = { role: null, parts: PART };
const TOOL: Shape = {
  functionDeclarations: { name: null, description: null, parameters: null, parametersJsonSchema: null, response: null, responseJsonSchema: null },
  googleSearch: null, googleSearchRetrieval: null,
};
const REQUEST: Shape = {
  model: null, contents: CONTENT, systemInstruction: CONTENT, tools: TOOL,
  toolConfig: { functionCallingConfig: { mode: null, allowedFunctionNames: null } },
  generationConfig: {
    maxOutputTokens: null, temperature: null, topP: null, topK: null, seed: null, presencePenalty: null, frequencyPenalty: null,
    stopSequences: null, responseMimeType: null, responseSchema: null, responseJsonSchema: null, candidateCount: null,
    responseLogprobs: null, logprobs: null, thinkingConfig: { thinkingBudget: null, includeThoughts: null, thinkingLevel: null },
  },
};

const snakeOf = (camel: string): string => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The body in lowerCamelCase, and the client's snake_case spelling of each name it renamed (camel -> snake). */
export interface Respelled {
  readonly body: Json;
  readonly spelled: ReadonlyMap<string, string>;
}

export function camelCaseRequest(body: Json): Respelled {
  const spelled = new Map<string, string>();
  return { body: camelObject(body, REQUEST, { at: '', spelled }), spelled };
}

interface Walk {
  readonly at: string;
  readonly spelled: Map<string, string>;
}

function camelValue(v: unknown, shape: Shape, walk: Walk): unknown {
  if (!Array.isArray(v)) return isObj(v) ? camelObject(v, shape, walk) : v;
  let out: unknown[] | null = null;
  for (let i = 0; i < v.length; i++) {
    const e: unknown = v[i];
    const next = isObj(e) || Array.isArray(e) ? camelValue(e, shape, { at: `${walk.at}[${i}]`, spelled: walk.spelled }) : e;
    if (out === null && next !== e) out = v.slice(0, i);
    if (out !== null) out.push(next);
  }
  return out ?? v;
}

/**
 * `obj` with its snake_case field names (those of `shape`) in lowerCamelCase, in the client's key order: a copy only
 * where a name below it is renamed, else `obj` itself (a lowerCamelCase body, the usual one, is read as it came, with
 * no copy of its messages a request).
 */
function camelObject(obj: Json, shape: Shape, walk: Walk): Json {
  let out: Json | null = null;
  const keys = Object.keys(obj);
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const value = obj[key];
    const camel = camelOf(key, shape);
    const inner = Object.hasOwn(shape, camel) ? shape[camel]! : null;
    if (camel === key && inner === null) {
      if (out !== null) out[key] = value;
      continue;
    }
    const at = walk.at === '' ? key : `${walk.at}.${key}`;
    if (camel !== key) {
      if (Object.hasOwn(obj, camel)) throw invalid(`both ${camel} and ${key} are set; send one of the two spellings`, at);
      walk.spelled.set(camel, key);
    }
    const next = inner === null ? value : camelValue(value, inner, { at, spelled: walk.spelled });
    if (out === null && (camel !== key || next !== value)) {
      out = {};
      for (let j = 0; j < k; j++) out[keys[j]!] = obj[keys[j]!];
    }
    if (out !== null) out[camel] = next;
  }
  return out ?? obj;
}

/** The shape's field `key` is the snake_case spelling of, else `key` itself. */
function camelOf(key: string, shape: Shape): string {
  if (!key.includes('_') || Object.hasOwn(shape, key)) return key;
  const camel = key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  return Object.hasOwn(shape, camel) && snakeOf(camel) === key ? camel : key;
}

/** A dotted Gemini name (`generationConfig.stopSequences`) as the client spelled its parts. */
export function respell(name: string, spelled: ReadonlyMap<string, string>): string {
  if (spelled.size === 0) return name;
  return name.split('.').map((seg) => spelled.get(seg) ?? seg).join('.');
}

/** The canonical fields whose Gemini name the client spelled otherwise, under its spelling (CanonicalRequest.fieldNames). */
export function clientFieldNames(spelled: ReadonlyMap<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  if (spelled.size === 0) return out;
  for (const [field, name] of Object.entries(GEMINI_PARAM_NAMES)) {
    const own = respell(name, spelled);
    if (own !== name) out[field] = own;
  }
  return out;
}
