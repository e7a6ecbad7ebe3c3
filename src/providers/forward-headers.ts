// Which of a client's headers a same-format passthrough forwards upstream: its protocol headers, by prefix, never
// its credentials or anything about the connection. The provider's config `headers` and the provider's key are
// applied after these, so they win.
//
//   forwarded   anthropic-*  (anthropic-beta, anthropic-version, ...)
//               openai-*     (openai-beta, ...)
//               x-goog-*     (x-goog-api-client, ...)
//               x-stainless-* (the official SDKs' own description of themselves: os, runtime, retry count)
//   never       authorization, x-api-key, x-goog-api-key, cookie; openai-organization, openai-project,
//               x-goog-user-project (they scope the client's own credentials, which the gateway replaces);
//               hop-by-hop and framing headers (connection, keep-alive, transfer-encoding, te, trailer, upgrade,
//               proxy-*, host, content-length)

import type { IncomingHttpHeaders } from 'node:http';

export const FORWARDED_PREFIXES: readonly string[] = ['anthropic-', 'openai-', 'x-goog-', 'x-stainless-'];

export const NEVER_FORWARDED: ReadonlySet<string> = new Set([
  'authorization', 'x-api-key', 'x-goog-api-key', 'cookie', 'openai-organization', 'openai-project', 'x-goog-user-project',
  'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'content-length',
]);

/** The client's protocol headers to send upstream (names lower-case, as node gives them). */
export function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NEVER_FORWARDED.has(name) || name.startsWith('proxy-')) continue;
    if (!FORWARDED_PREFIXES.some((p) => name.startsWith(p))) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
