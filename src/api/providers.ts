// GET /api/providers: the configured providers as the console's Providers page shows them: name, group, wire format,
// the catalog that prices them, how they sign in (no secret: the auth type, and for OAuth the flow and the fixed
// redirect URI, and whether a token is stored), and each listed model with its resolved price and where it came from (`config`,
// `catalog@<version>`, `genai-prices@<version>`, `none`; config/pricing.ts). `unpriced` marks a paid model no price covers: its cost is recorded
// as unknown (docs/catalog.md). Read-only, any gateway key.

import { existsSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import type { ProviderConfig } from '../config/types.js';
import { CATALOG_PACKAGE, CATALOG_VERSION } from '../config/catalog-prices.js';
import { resolvePrice } from '../config/pricing.js';
import { CredentialStore } from '../providers/credentials.js';

/** Whether a sign-in left tokens for `id` (the file exists; not whether they still work). */
function tokenStored(store: CredentialStore, id: string): boolean {
  try {
    return existsSync(store.pathFor(id));
  } catch {
    return false; // an id that cannot name a file has none
  }
}

function authView(p: ProviderConfig, tokens: () => boolean) {
  const o = p.auth.type === 'oauth' ? p.auth.oauth : undefined;
  return {
    type: p.auth.type,
    flow: o === undefined ? null : (o.flow ?? 'device_code'),
    redirect_uri: o?.redirect_uri ?? null,
    token_stored: o === undefined ? null : tokens(),
  };
}

export function providerView(id: string, p: ProviderConfig, store: CredentialStore) {
  return {
    id,
    name: p.name,
    group: p.group,
    format: p.format,
    catalog: p.catalog ? p.catalog : null,
    auth: authView(p, () => tokenStored(store, id)),
    models: Object.keys(p.models).map((model) => {
      const { price, source } = resolvePrice(p, model);
      return { id: model, price, price_source: source, unpriced: p.group === 'paid' && source === 'none' };
    }),
  };
}

export const providerRoutes: FastifyPluginAsync<{ config: ConfigHolder }> = async (app, { config }) => {
  app.get('/api/providers', async () => {
    const store = new CredentialStore(config.started.storage.data_dir);
    return {
      catalog: { package: CATALOG_PACKAGE, version: CATALOG_VERSION },
      providers: Object.entries(config.current.providers).map(([id, p]) => providerView(id, p, store)),
    };
  });
};
