// Same-format passthrough (docs/translation.md "Same-format passthrough"): when a client speaks its provider's own
// format, the body goes upstream as the client sent it, unknown fields included, with only the documented rewrites.
// Each format describes those rewrites in one small descriptor; src/pipeline/passthrough.ts is the one handler that
// applies them, pipes the upstream's bytes back unchanged and reads usage from them as they pass.
//
// Descriptors are pure: they edit the request's own parsed body (nothing else holds it) and read answers.

import type { ModelConfig, ProviderConfig } from '../config/types.js';
import type { ThinkingLevel } from './canonical.js';
import type { Usage } from '../ledger/types.js';
import type { WireCodec } from './codec.js';

export type Json = Record<string, unknown>;

/** What a client call asks of the upstream: the action (Gemini's URL verb; '' for formats without one) and streaming. */
export interface SameFormatCall {
  readonly stream: boolean;
  readonly action: string;
  /** Gemini's `alt` query parameter as the client sent it ('' when absent). */
  readonly alt: string;
}

/** What a stream had shown when it broke off: the answer's id and model, and how many events went by. */
export interface StreamSeen {
  readonly id: string | null;
  readonly model: string | null;
  readonly events: number;
}

export interface SameFormat {
  /** The format's codec: parses whole answers and stream events for usage, exactly as the translated path does. */
  readonly codec: WireCodec;
  /**
   * Whether the call's answer is an event stream: a streamed call's, but for Gemini's `streamGenerateContent` without
   * `alt=sse`, which answers one JSON array of chunks. A 200 that is not one is refused (notEventStream).
   */
  expectsEventStream(call: SameFormatCall): boolean;
  /** The upstream path (with its query) for `modelId` on `provider`. */
  upstreamPath(provider: ProviderConfig, modelId: string, call: SameFormatCall): string;
  /** Headers the format sends when the client did not (anthropic-version). Client and config headers replace them. */
  readonly defaultHeaders: Readonly<Record<string, string>>;
  /** The provider's key, in the header the format uses (or `auth.header`). */
  authHeaders(provider: ProviderConfig): Record<string, string>;
  /** Put the upstream model id in the body (a no-op where the model is in the URL). */
  setModel(body: Json, modelId: string): void;
  /** The output-token limit the body asks for, if any, and how to lower it. */
  getMaxTokens(body: Json): number | undefined;
  setMaxTokens(body: Json, n: number): void;
  /**
   * Put a thinking level (the model suffix) on the format's own parameter; `model` decides the family. Returns the
   * client parameters it removed (sampling parameters thinking forbids), and the thinking parameter itself when the
   * model cannot take the level: listed to the client like every removal.
   */
  applyThinking(body: Json, level: ThinkingLevel, model: ModelConfig | null): string[];
  /**
   * Remove what capabilities `caps` (a listed, non-empty set) exclude (src/wire/capabilities.ts's table); returns the
   * client's names of what it removed (the names the format's codec lists on the translated path).
   */
  stripExcluded(body: Json, caps: ReadonlySet<string>): string[];
  /** Usage of a whole answer the codec could not parse (an answer shape it does not know): read directly. */
  usageOf(json: unknown): Usage | null;
  /** The terminal error to append when the upstream's stream breaks off (the client's SDK raises on it). */
  terminalError(code: string, message: string, seen: StreamSeen): string;
}

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `obj[key]` as an object, created when absent or not an object. */
export function objectAt(obj: Json, key: string): Json {
  const v = obj[key];
  if (isObj(v)) return v;
  const fresh: Json = {};
  obj[key] = fresh;
  return fresh;
}

/** Remove `key` from `obj[parent]`, and `obj[parent]` when that leaves it empty; true when `key` was there. */
export function deleteNested(obj: Json, parent: string, key: string): boolean {
  const p = obj[parent];
  if (!isObj(p) || !(key in p)) return false;
  delete p[key];
  if (Object.keys(p).length === 0) delete obj[parent];
  return true;
}

/** Remove each of `keys` from `obj`, adding the name of each that was there to `removed`. */
export function removeKeys(obj: Json, keys: readonly string[], removed: string[]): void {
  for (const k of keys) {
    if (!Object.hasOwn(obj, k)) continue;
    delete obj[k];
    removed.push(k);
  }
}

/** Filter `arr` in place, keeping what `keep` accepts. */
export function filterInPlace(arr: unknown[], keep: (v: unknown) => boolean): void {
  let w = 0;
  for (const v of arr) if (keep(v)) arr[w++] = v;
  arr.length = w;
}

/** The media capability a MIME type needs: images vision, PDFs pdf, audio audio; null for anything else. */
export function capabilityOfMime(mime: unknown): 'vision' | 'pdf' | 'audio' | null {
  if (typeof mime !== 'string') return null;
  if (mime.startsWith('image/')) return 'vision';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime === 'application/pdf') return 'pdf';
  return null;
}
