// What every outbound format derives from a provider row the same way: the upstream path under base_url (computed
// once per frozen provider config) and the API-key header of the OpenAI family.

import type { ProviderConfig } from '../config/types.js';

const paths = new WeakMap<ProviderConfig, Map<string, string>>();

/**
 * `<base_url path><suffix>`, memoised per provider config. `fallbackBase` is used when the provider has no
 * base_url (the in-process mock answers on OpenAI's `/v1`).
 */
export function endpointPath(p: ProviderConfig, suffix: string, fallbackBase = ''): string {
  let byProvider = paths.get(p);
  if (byProvider === undefined) paths.set(p, (byProvider = new Map()));
  let path = byProvider.get(suffix);
  if (path === undefined) {
    const base = p.base_url ? new URL(p.base_url).pathname.replace(/\/+$/, '') : fallbackBase;
    byProvider.set(suffix, (path = `${base}${suffix}`));
  }
  return path;
}

/** `Authorization: Bearer <key>`, or the key in the configured `auth.header`; nothing without a key (an OAuth
 * connection's key is its access token, always sent as a Bearer token). */
export function apiKeyHeaders(p: ProviderConfig): Record<string, string> {
  if (p.auth.type === 'none' || !p.auth.key) return {};
  const header = (p.auth.header ?? 'authorization').toLowerCase();
  return { [header]: header === 'authorization' ? `Bearer ${p.auth.key}` : p.auth.key };
}
