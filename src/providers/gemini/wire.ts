// Shared pieces of the `gemini` wire format (generativelanguage v1beta, camelCase JSON as @google/genai sends it):
// the JSON shapes, part <-> canonical part mapping and finish reasons. Pure; no I/O.

import { TollgateError } from '../../errors.js';
import type { MediaSource, Part, StopReason } from '../../translate/canonical.js';

export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

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

/** Gemini's own id when it sent one, else `call_<n>` with n counting the function calls of the answer from 0. */
export const syntheticCallId = (n: number): string => `call_${n}`;

/** A Gemini media part -> canonical image / audio / file, by MIME type (video and anything else is a file). */
export function mediaPart(mimeType: string, source: MediaSource): Part {
  if (mimeType.startsWith('image/')) return { type: 'image', source };
  if (mimeType.startsWith('audio/')) return { type: 'audio', source };
  return { type: 'file', source };
}

/** Canonical media source -> Gemini inlineData / fileData. A `data:` URL is sent inline. */
export function mediaToGemini(source: MediaSource): GeminiPart {
  switch (source.kind) {
    case 'base64':
      return { inlineData: { mimeType: source.mediaType, data: source.data } };
    case 'file_id':
      return { fileData: source.mediaType === undefined ? { fileUri: source.id } : { mimeType: source.mediaType, fileUri: source.id } };
    case 'url': {
      const m = /^data:([^;,]+)(?:;[^;,]*)*;base64,(.*)$/s.exec(source.url);
      if (m) return { inlineData: { mimeType: m[1]!, data: m[2]! } };
      return { fileData: { fileUri: source.url } };
    }
  }
}

/**
 * The parts of a model answer -> canonical text / reasoning / tool_call parts. `thought: true` text is reasoning and
 * keeps its thoughtSignature; a thoughtSignature on a text or functionCall part has no canonical place yet and is
 * dropped. Empty text, inline media, code execution and other part kinds are not part of a canonical answer.
 * `callIndex` is the number of function calls already seen (for synthetic ids); returns the parts and the new count.
 */
export function answerParts(raw: unknown, callIndex = 0): { parts: Part[]; calls: number } {
  const parts: Part[] = [];
  let calls = callIndex;
  if (!Array.isArray(raw)) return { parts, calls };
  for (const p of raw) {
    if (!isObj(p)) continue;
    const sig = typeof p.thoughtSignature === 'string' && p.thoughtSignature !== '' ? p.thoughtSignature : undefined;
    if (typeof p.text === 'string') {
      if (p.thought === true) {
        if (p.text !== '' || sig !== undefined) parts.push(sig === undefined ? { type: 'reasoning', text: p.text } : { type: 'reasoning', text: p.text, signature: sig });
      } else if (p.text !== '') {
        parts.push({ type: 'text', text: p.text });
      }
    } else if (isObj(p.functionCall) && typeof p.functionCall.name === 'string') {
      const fc = p.functionCall;
      const id = typeof fc.id === 'string' && fc.id !== '' ? fc.id : syntheticCallId(calls);
      parts.push({ type: 'tool_call', id, name: fc.name as string, arguments: JSON.stringify(isObj(fc.args) ? fc.args : {}) });
      calls++;
    }
  }
  return { parts, calls };
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
      out.push({ functionCall: { id: p.id, name: p.name, args: argsObject(p.arguments) } });
    }
  }
  return out;
}

/** A reasoning part -> a Gemini thought part; redacted or opaque-only reasoning (another family's) is dropped. */
export function reasoningToGemini(p: Extract<Part, { type: 'reasoning' }>): GeminiPart | null {
  if (p.redacted === true) return null;
  if (p.text === '' && p.signature === undefined) return null;
  return p.signature === undefined ? { text: p.text, thought: true } : { text: p.text, thought: true, thoughtSignature: p.signature };
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
