// What every outbound format derives from a provider row the same way: the upstream path under base_url and the
// API-key header of the OpenAI family.

import type { ProviderConfig } from '../config/types.js';

// The base_url's path, parsed once per frozen provider config: one string per provider, whatever the clients send.
// Only the base is memoised, never `<base><suffix>`: a suffix can carry client input (a Gemini passthrough's `alt`
// value, a model id under allow_unlisted_models), and a memo keyed by it grew by every distinct value for the life
// of the config (a memory DoS). Joining the two each time is also the faster way: a Map lookup first hashes the
// suffix the caller just built, and measured at about 200 ns a call against about 85 ns for base lookup and join.
const bases = new WeakMap<ProviderConfig, string>();

/**
 * `<base_url path><suffix>`, the base parsed once per provider config. `fallbackBase` is used when the provider has
 * no base_url (the in-process mock answers on OpenAI's `/v1`).
 */
export function endpointPath(p: ProviderConfig, suffix: string, fallbackBase = ''): string {
  return basePath(p, fallbackBase) + suffix;
}

function basePath(p: ProviderConfig, fallbackBase: string): string {
  if (!p.base_url) return fallbackBase;
  let base = bases.get(p);
  if (base === undefined) bases.set(p, (base = new URL(p.base_url).pathname.replace(/\/+$/, '')));
  return base;
}

/** `Authorization: Bearer <key>`, or the key in the configured `auth.header`; nothing without a key (an OAuth
 * connection's key is its access token, always sent as a Bearer token). */
export function apiKeyHeaders(p: ProviderConfig): Record<string, string> {
  if (p.auth.type === 'none' || !p.auth.key) return {};
  const header = (p.auth.header ?? 'authorization').toLowerCase();
  return { [header]: header === 'authorization' ? `Bearer ${p.auth.key}` : p.auth.key };
}
