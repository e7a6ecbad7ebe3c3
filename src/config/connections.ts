// Provider connections: the credentials (and, for a region- or cluster-specific key, the base URL) one upstream call
// goes out with. A provider has one connection per entry of `auth.keys`, or one named `default` (a single
// `auth.key`, or no auth) or `oauth`. Each connection is presented as an effective provider row (base_url and key
// filled in), computed once per frozen config, so codecs and the dispatcher need not know connections exist.

import type { ProviderConfig } from '../config/types.js';

export interface Connection {
  /** `<provider>#<name>`: the key of its cooldown, its keep-alive window and its connection pool. */
  readonly id: string;
  readonly providerId: string;
  readonly name: string;
  /** The provider row as this connection sends it. */
  readonly provider: ProviderConfig;
  /** Keep-alive pings are on for this connection. */
  readonly keepalive: boolean;
}

const cache = new WeakMap<ProviderConfig, readonly Connection[]>();

export function connectionsOf(providerId: string, p: ProviderConfig): readonly Connection[] {
  let found = cache.get(p);
  if (found) return found;
  const make = (name: string, provider: ProviderConfig, keepalive: boolean): Connection =>
    Object.freeze({ id: `${providerId}#${name}`, providerId, name, provider, keepalive });
  if (p.auth.type === 'api_key' && p.auth.keys && p.auth.keys.length > 0) {
    found = p.auth.keys.map((k) =>
      make(
        k.name,
        Object.freeze({ ...p, base_url: k.base_url ?? p.base_url, auth: Object.freeze({ type: 'api_key', key: k.key, header: p.auth.header }) }) as ProviderConfig,
        k.keepalive ?? p.keepalive.enabled,
      ),
    );
  } else {
    found = [make(p.auth.type === 'oauth' ? 'oauth' : 'default', p, p.keepalive.enabled)];
  }
  cache.set(p, (found = Object.freeze(found)));
  return found;
}

/** The provider row with an OAuth access token in place of a key (sent as `Authorization: Bearer`). */
export function withAccessToken(p: ProviderConfig, token: string): ProviderConfig {
  return { ...p, auth: { ...p.auth, key: token, header: 'authorization' } };
}
