// Shared pieces of the `gemini` wire format (generativelanguage v1beta, camelCase JSON as @google/genai sends it):
// the JSON shapes, part <-> canonical part mapping and finish reasons. Pure; no I/O.

import { randomBytes } from 'node:crypto';
import { TollgateError } from '../../core/errors.js';
import type { MediaSource, Part, StopReason } from '../canonical.js';
import { own } from '../../core/own.js';

export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The path of model `modelId` at a Gemini API: `/models/<id>` (a leading `models/` taken off), or `/tunedModels/<id>`
 * for a tuned model, the id one encoded path segment (`@` kept, as Vertex versions write it). Put in the URL as it
 * came, an unlisted id (`allow_unlisted_models`) holding `:`, `?` or `/..` called another method or resource of the
 * API with the provider's key (`gemini-2.5-flash:batchEmbedContents?` became a batch embedding call).
 */
export function modelPath(modelId: string): string {
  const tuned = modelId.startsWith('tunedModels/');
  const id = tuned ? modelId.slice('tunedModels/'.length) : modelId.replace(/^models\//, '');
  let segment: string;
  try {
    segment = encodeURIComponent(id).replace(/%40/g, '@');
  } catch {
    // A lone surrogate (URIError): the client's model id, not a fault of the gateway's.
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', 'the model id is not valid text (it holds a lone surrogate)', { param: 'model' });
  }
  return `/${tuned ? 'tunedModels' : 'models'}/${segment}`;
}

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { id?: string; name: string; args: Json };
  functionResponse?: { id?: string; name: string; response: Json };
}

export interface GeminiContent {
  role?: 'user' | 'model';
  parts: GeminiPart[];
}

export function invalid(message: string, param?: string): TollgateError {
  return new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, param === undefined ? {} : { param });
}

/**
 * Canonical tool-call `arguments` (JSON text) -> Gemini `args` (an object). Text that is not a JSON object
 * (invalid JSON, '' for a call without arguments, an array or a scalar) becomes {}: Gemini accepts only an object.
 */
export function argsObject(args: string): Json {
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : {};
  } catch {
    return {};
  }
}

/**
 * The id of a function call Gemini sent without one: `call_<n>` in a request (n counting the request's calls, so unique
 * in it), `call_<answer>_<n>` in an answer (`answer`: callIdBase of it), so the calls of two answers never share an id
 * in a client's history (an Anthropic upstream refuses a history with duplicate tool_use ids).
 */
export const syntheticCallId = (n: number, answer?: string): string => (answer === undefined ? `call_${n}` : `call_${answer}_${n}`);

/**
 * What an answer's made-up call ids are made of: its `responseId` (letters, digits, `_` and `-` kept, at most 24, so
 * that `call_<base>_<n>` stays within the 40 characters OpenAI takes for a tool call's id), or a random 12 hex digits
 * when it has none.
 */
export function callIdBase(responseId: unknown): string {
  const own = typeof responseId === 'string' ? responseId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 24) : '';
  return own !== '' ? own : randomBytes(6).toString('hex');
}

/** A Gemini media part -> canonical image / audio / file, by MIME type (video and anything else is a file). */
export function mediaPart(mimeType: string, source: MediaSource): Part {
  if (mimeType.startsWith('image/')) return { type: 'image', source };
  if (mimeType.startsWith('audio/')) return { type: 'audio', source };
  return { type: 'file', source };
}

/** When a URL does not say its type: what a part of that kind most likely is. */
const DEFAULT_MIME = { image: 'image/jpeg', file: 'application/pdf', audio: 'audio/mpeg' } as const;
const MIME_BY_EXT: Readonly<Record<string, string>> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', heic: 'image/heic',
  pdf: 'application/pdf', txt: 'text/plain', mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', flac: 'audio/flac',
};

/** The media type of a URL's file name, else the kind's default. */
function guessMime(url: string, kind: keyof typeof DEFAULT_MIME): string {
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  return (ext !== undefined ? own(MIME_BY_EXT, ext) : undefined) ?? DEFAULT_MIME[kind];
}

/**
 * Canonical media source -> Gemini inlineData / fileData. A `data:` URL is sent inline; another URL goes as fileData
 * with a mimeType (Gemini needs one to know an image is an image), taken from the file name or the part's kind.
 */
export function mediaToGemini(source: MediaSource, kind: keyof typeof DEFAULT_MIME = 'file'): GeminiPart {
  switch (source.kind) {
    case 'base64':
      return { inlineData: { mimeType: source.mediaType, data: source.data } };
    case 'file_id':
      return { fileData: source.mediaType === undefined ? { fileUri: source.id } : { mimeType: source.mediaType, fileUri: source.id } };
    case 'url': {
      const m = /^data:([^;,]+)(?:;[^;,]*)*;base64,(.*)$/s.exec(source.url);
      if (m) return { inlineData: { mimeType: m[1]!, data: m[2]! } };
      return { fileData: { mimeType: guessMime(source.url, kind), fileUri: source.url } };
    }
  }
}

/**
 * A fileData URI: a plain http(s) URL is a URL source; a Files API URI (or anything else: gs://) is a file id only
 * Gemini can read (origin 'gemini').
 */
export function fileDataSource(uri: string, mime: string | undefined): MediaSource {
  const filesApi = /^https:\/\/generativelanguage\.googleapis\.com\/.*\/files\//.test(uri);
  if (/^https?:\/\//.test(uri) && !filesApi) return { kind: 'url', url: uri };
  return mime === undefined ? { kind: 'file_id', id: uri, origin: 'gemini' } : { kind: 'file_id', id: uri, mediaType: mime, origin: 'gemini' };
}

/**
 * The parts of a model answer -> canonical text / reasoning / tool_call parts. `thought: true` text is reasoning and
 * keeps its thoughtSignature; a thoughtSignature on a text or functionCall part has no canonical place yet and is
 * dropped. Empty text, inline media, code execution and other part kinds are not part of a canonical answer.
 * The answer's `responseId` (callIdBase, worked out at the first call without an id) and `callIndex`, the number of
 * function calls already seen, make the synthetic ids; returns the parts and the new count.
 */
export function answerParts(raw: unknown, responseId: unknown, callIndex = 0): { parts: Part[]; calls: number } {
  const parts: Part[] = [];
  let calls = callIndex;
  let idBase: string | undefined;
  if (!Array.isArray(raw)) return { parts, calls };
  for (const p of raw) {
    if (!isObj(p)) continue;
    const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined;
    if (typeof p.text === 'string') {
      if (p.thought === true) {
        if (p.text !== '' || sig !== undefined) parts.push(reasoningPart(p.text, sig));
      } else if (p.text !== '') {
        parts.push({ type: 'text', text: p.text });
      }
    } else if (isObj(p.functionCall) && typeof p.functionCall.name === 'string') {
      const fc = p.functionCall;
      const id = typeof fc.id === 'string' && fc.id !== '' ? fc.id : syntheticCallId(calls, (idBase ??= callIdBase(responseId)));
      parts.push(toolCallPart(id, fc.name as string, JSON.stringify(isObj(fc.args) ? fc.args : {}), sig));
      calls++;
    }
  }
  return { parts, calls };
}

/** A thought part -> canonical reasoning; its signature is Gemini's own (origin 'gemini'). */
export function reasoningPart(text: string, sig: string | undefined): Part {
  return sig === undefined ? { type: 'reasoning', text } : { type: 'reasoning', text, signature: sig, origin: 'gemini' };
}

/** A functionCall part -> canonical tool_call, keeping the thought signature Gemini 3 wants back with the call. */
export function toolCallPart(id: string, name: string, args: string, sig: string | undefined): Part {
  // The placeholder a gateway puts on another family's call (build.ts) is not a signature worth keeping.
  return sig === undefined || sig === 'skip_thought_signature_validator' ? { type: 'tool_call', id, name, arguments: args } : { type: 'tool_call', id, name, arguments: args, signature: sig, origin: 'gemini' };
}

/** Canonical answer parts -> Gemini parts (text, thought, functionCall). Redacted reasoning is not sent. */
export function answerToGemini(content: readonly Part[]): GeminiPart[] {
  const out: GeminiPart[] = [];
  for (const p of content) {
    if (p.type === 'text') {
      if (p.text !== '') out.push({ text: p.text });
    } else if (p.type === 'reasoning') {
      const r = reasoningToGemini(p);
      if (r) out.push(r);
    } else if (p.type === 'tool_call') {
      const call: GeminiPart = { functionCall: { id: p.id, name: p.name, args: argsObject(p.arguments) } };
      if (p.signature !== undefined && p.origin === 'gemini') call.thoughtSignature = p.signature;
      out.push(call);
    }
  }
  return out;
}

/**
 * A reasoning part -> a Gemini thought part. Only Gemini's own signature (origin 'gemini') is sent; another
 * family's reasoning goes as plain thought text, and redacted or signature-only reasoning of another family is dropped.
 */
export function reasoningToGemini(p: Extract<Part, { type: 'reasoning' }>): GeminiPart | null {
  if (p.redacted === true) return null;
  const sig = p.origin === 'gemini' ? p.signature : undefined;
  if (p.text === '' && sig === undefined) return null;
  return sig === undefined ? { text: p.text, thought: true } : { text: p.text, thought: true, thoughtSignature: sig };
}

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION']);

/**
 * Gemini finishReason -> canonical. STOP is also what a stop sequence gives (Gemini does not say which), so it is
 * 'end', or 'tool_calls' when the answer holds function calls. MALFORMED_FUNCTION_CALL, OTHER and unknown values
 * are 'error'.
 */
export function stopReasonFrom(finishReason: string, sawToolCall: boolean): StopReason {
  if (finishReason === 'STOP') return sawToolCall ? 'tool_calls' : 'end';
  if (finishReason === 'MAX_TOKENS') return 'max_tokens';
  if (FILTERED.has(finishReason)) return 'content_filter';
  return 'error';
}

/** Canonical stop reason -> Gemini finishReason. */
export function finishReasonFor(r: StopReason): string {
  switch (r) {
    case 'end':
    case 'tool_calls':
    case 'stop_sequence':
      return 'STOP';
    case 'max_tokens':
      return 'MAX_TOKENS';
    case 'content_filter':
    case 'refusal':
      return 'SAFETY';
    case 'error':
      return 'OTHER';
  }
}
