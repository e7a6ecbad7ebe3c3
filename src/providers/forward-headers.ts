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

// Which of the upstream's answer headers a same-format path passes back to the client (the passthrough and the OpenAI
// Chat fast path; a translated answer is the gateway's own rendering, so it carries none): what a provider tells its
// own client about the call, which SDKs and CLIs read. Anthropic's `request-id` (the SDK's `_request_id`), the rate
// limits (`anthropic-ratelimit-*`, `x-ratelimit-*`: budgets and resets a client paces itself by), OpenAI's
// `openai-processing-ms` and `openai-version`. The upstream's `x-request-id` comes back as `x-upstream-request-id`:
// the client's `x-request-id` is the id of its usage row. Nothing else: no cookies, no account identifiers
// (`openai-organization`, `anthropic-organization-id`), no framing.
const ANSWER_PREFIXES: readonly string[] = ['anthropic-ratelimit-', 'x-ratelimit-'];
const ANSWER_NAMES: Readonly<Record<string, string>> = {
  'request-id': 'request-id', 'x-request-id': 'x-upstream-request-id', 'openai-processing-ms': 'openai-processing-ms', 'openai-version': 'openai-version',
};
/** A value Node sends as it is (tab, visible ASCII, obs-text): anything else the upstream sent stays behind. */
const SENDABLE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** The upstream's answer headers the client gets back on a same-format path (names lower-case, as undici gives them). */
export function answerHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> | null {
  let out: Record<string, string> | null = null;
  for (const name in headers) {
    const as = Object.hasOwn(ANSWER_NAMES, name) ? ANSWER_NAMES[name]! : ANSWER_PREFIXES.some((p) => name.startsWith(p)) ? name : null;
    if (as === null) continue;
    const v = headers[name];
    const value = Array.isArray(v) ? v.join(', ') : v;
    if (value === undefined || !SENDABLE.test(value)) continue;
    (out ??= {})[as] = value;
  }
  return out;
}
