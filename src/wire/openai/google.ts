// Gemini's thought signature in Chat Completions form. Google's OpenAI-compatible endpoint
// (`https://generativelanguage.googleapis.com/v1beta/openai/`, and Vertex AI's OpenAI endpoint) returns the signature
// Gemini 3 puts on a function call as `tool_calls[i].extra_content.google.thought_signature` (on the message, and on
// the streamed delta), and refuses (400) a next request whose current-turn calls come back without it. Read here into
// the canonical call (`signature`, origin 'gemini'), and written back only to that endpoint: another
// OpenAI-compatible server (OpenAI itself validates message fields) never gets the unknown field.

import type { Part } from '../canonical.js';
import { FOREIGN_CALL_SIGNATURE } from '../gemini/build.js';
import { isObject, type Json } from './chat-validate.js';

/**
 * The thought signature on a Chat tool call (or streamed tool call fragment): `extra_content.google.thought_signature`
 * when it is a non-empty string. The placeholder a gateway puts on a call Gemini did not make is no signature.
 */
export function googleSignatureOf(tc: Json): string | undefined {
  const google = isObject(tc.extra_content) ? tc.extra_content.google : undefined;
  const sig = isObject(google) ? google.thought_signature : undefined;
  return typeof sig === 'string' && sig !== '' && sig !== FOREIGN_CALL_SIGNATURE ? sig : undefined;
}

/** The canonical call's fields for a Chat tool call's signature: `{signature, origin: 'gemini'}`, or none. */
export function signedBy(tc: Json): { signature: string; origin: 'gemini' } | Record<string, never> {
  const signature = googleSignatureOf(tc);
  return signature === undefined ? {} : { signature, origin: 'gemini' };
}

/** `extra_content` carrying a thought signature, as Google's endpoint sends and reads it. */
export const googleExtra = (signature: string): Json => ({ extra_content: { google: { thought_signature: signature } } });

/** A canonical call's Gemini signature as Chat `extra_content` fields (none for another family's or no signature). */
export function extraOf(p: { readonly signature?: string; readonly origin?: string }): Json {
  return p.signature !== undefined && p.origin === 'gemini' ? googleExtra(p.signature) : {};
}

/**
 * Whether `baseUrl` is Google's OpenAI-compatible endpoint: host `generativelanguage.googleapis.com` (the Gemini API)
 * or `aiplatform.googleapis.com` with or without a region prefix (`us-central1-aiplatform.googleapis.com`, Vertex AI).
 * Only there are thought signatures sent as `extra_content`.
 */
export function isGoogleOpenAIEndpoint(baseUrl: string | undefined): boolean {
  if (!baseUrl) return false;
  let host: string;
  try {
    host = new URL(baseUrl).hostname;
  } catch {
    return false;
  }
  return host === 'generativelanguage.googleapis.com' || /(^|[.-])aiplatform\.googleapis\.com$/.test(host);
}

/**
 * An assistant turn's Chat tool calls for Google's endpoint: each call whose canonical part carries a Gemini signature
 * gets it as `extra_content`, and the first call, when it has none (a call another family made, or a client that
 * could not keep it), gets the placeholder Google documents for histories Gemini did not produce, as the Gemini
 * builder does (src/wire/gemini/build.ts). `calls[i]` is the rendering of `parts[i]`.
 */
export function signCalls(calls: Json[], parts: readonly Extract<Part, { type: 'tool_call' }>[]): void {
  calls.forEach((c, i) => {
    const p = parts[i]!;
    const sig = p.signature !== undefined && p.origin === 'gemini' ? p.signature : i === 0 ? FOREIGN_CALL_SIGNATURE : undefined;
    if (sig !== undefined) Object.assign(c, googleExtra(sig));
  });
}
