// Small helpers shared by the `openai-responses` codec files: type guards for untrusted JSON, data URLs, the
// reasoning envelope that carries encrypted reasoning through the canonical model, and deterministic item ids.

import { TollgateError } from '../../core/errors.js';
import type { MediaSource, Part } from '../canonical.js';

export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const arr = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : []);

/** A client error naming the offending parameter (OpenAI style `param`). */
export function invalid(message: string, param?: string): never {
  throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, param === undefined ? {} : { param });
}

/** `data:<type>[;params];base64,<data>` -> its parts; anything else (a URL, a non-base64 data URL) -> null. */
export function parseDataUrl(s: string): { mediaType: string; data: string } | null {
  if (!s.startsWith('data:')) return null;
  const comma = s.indexOf(',');
  if (comma === -1) return null;
  const header = s.slice(5, comma);
  if (!/;base64$/i.test(header)) return null;
  const mediaType = header.slice(0, -7).split(';')[0]!.trim();
  return { mediaType: mediaType === '' ? 'application/octet-stream' : mediaType, data: s.slice(comma + 1) };
}

export const dataUrl = (mediaType: string, data: string): string => `data:${mediaType};base64,${data}`;

/** A URL or data URL (image_url / file_url / file_data) -> a canonical source. */
export function sourceFromUrl(url: string): MediaSource {
  const d = parseDataUrl(url);
  return d ? { kind: 'base64', mediaType: d.mediaType, data: d.data } : { kind: 'url', url };
}

// ---- Reasoning envelope -------------------------------------------------------------------------------------
// A Responses reasoning item carries `encrypted_content` that only this API family can read. It travels through
// the canonical model as a JSON envelope tagged with the family, in a reasoning part's `opaque` (whole answers and
// client requests; the part also gets `origin: 'openai-responses'`) or in a `reasoning_signature` event (streams:
// the only channel an event has, and events carry no origin, hence the tag inside the data). buildRequest accepts
// it from either field of an untagged or openai-responses-tagged part; another family's signature or opaque data
// is never mistaken for it.

const FAMILY = 'openai-responses';
const ENVELOPE_PREFIX = `{"format":"${FAMILY}"`;

export interface ReasoningEnvelope {
  readonly id?: string;
  readonly encryptedContent: string;
}

export function encodeEnvelope(id: string | undefined, encryptedContent: string): string {
  return JSON.stringify(id === undefined ? { format: FAMILY, encrypted_content: encryptedContent } : { format: FAMILY, id, encrypted_content: encryptedContent });
}

export function decodeEnvelope(s: string | undefined): ReasoningEnvelope | null {
  if (s === undefined || !s.startsWith(ENVELOPE_PREFIX)) return null;
  try {
    const o = JSON.parse(s) as unknown;
    if (!isObj(o) || o.format !== FAMILY || typeof o.encrypted_content !== 'string') return null;
    const id = str(o.id);
    return id === undefined ? { encryptedContent: o.encrypted_content } : { id, encryptedContent: o.encrypted_content };
  } catch {
    return null;
  }
}

/** This family's envelope on a canonical reasoning part, from `opaque` or `signature`. */
export function envelopeOf(p: Extract<Part, { type: 'reasoning' }>): ReasoningEnvelope | null {
  if (p.origin !== undefined && p.origin !== 'openai-responses') return null;
  return decodeEnvelope(p.opaque) ?? decodeEnvelope(p.signature);
}

/**
 * A Responses reasoning item's text: its summary parts joined by a blank line (the stream parser inserts the same
 * separator between summary parts), or, when there is no summary, its raw `reasoning_text` content.
 */
export function reasoningText(item: Json): { text: string; present: boolean } {
  const summary = arr(item.summary).filter(isObj);
  if (summary.length > 0) return { text: summary.map((s) => str(s.text) ?? '').join('\n\n'), present: true };
  const content = arr(item.content).filter((c) => isObj(c) && c.type === 'reasoning_text') as Json[];
  if (content.length > 0) return { text: content.map((c) => str(c.text) ?? '').join('\n\n'), present: true };
  return { text: '', present: false };
}

/** A Responses reasoning item -> a canonical reasoning part; null when it carries nothing (no text, no encrypted content). */
export function reasoningPart(item: Json): Extract<Part, { type: 'reasoning' }> | null {
  const { text, present } = reasoningText(item);
  const enc = str(item.encrypted_content);
  if (!present && enc === undefined) return null;
  return enc === undefined ? { type: 'reasoning', text } : { type: 'reasoning', text, opaque: encodeEnvelope(str(item.id), enc), origin: 'openai-responses' };
}

// ---- Ids ----------------------------------------------------------------------------------------------------
// Codecs have no randomness: rendered ids derive from the canonical response id and the output position.

export const responseId = (id: string): string => (id.startsWith('resp_') ? id : `resp_${id}`);
export const idStem = (respId: string): string => (respId.startsWith('resp_') ? respId.slice(5) : respId);
export const itemId = (prefix: 'msg' | 'rs', stem: string, outputIndex: number): string => `${prefix}_${stem}_${outputIndex}`;
export const callItemId = (callId: string): string => `fc_${callId.replace(/^call_/, '')}`;
