// The models of a catalog provider that the first catalog (config/catalog.ts) lacks and the second price source names:
// the package's own model ids for the provider the catalog provider is priced from (generated/prices-models.ts; not
// those of the providers it falls back to), each the catalog does not list under the same id (the id the price lookup
// compares), priced as a configured model of it would be (config/price-rules.ts, `genai-prices@<version>`) and sized
// from the second limits source (config/limits.ts). Shown by GET /api/catalog and taken by `tollgate providers add`
// (docs/catalog.md, "Models the catalog lacks"). Loaded with the catalog, never at start.

import { catalogModels, type CatalogModel } from './catalog.js';
import { LIMITS_SOURCE, outputLimit, sourceLimits } from './limits.js';
import { PRICES_MODELS } from './generated/prices-models.js';
import { RULES_SOURCE, rulesPrice, rulesProvider } from './price-rules.js';

/** A model the catalog lacks, with where its price and its limits came from. */
export interface SourceModel extends CatalogModel {
  readonly priceSource: typeof RULES_SOURCE;
  /** `llm-info@<version>` when the second limits source knows the model; null otherwise. */
  readonly limitsSource: typeof LIMITS_SOURCE | null;
}

const cache = new Map<string, readonly SourceModel[]>();

function listed(catalogId: string): readonly SourceModel[] {
  const provider = rulesProvider(catalogId);
  if (provider === null || !Object.hasOwn(PRICES_MODELS, provider)) return [];
  const inCatalog = new Set(catalogModels(catalogId).map((m) => m.id));
  const out: SourceModel[] = [];
  for (const [id, name] of PRICES_MODELS[provider]!) {
    if (inCatalog.has(id)) continue;
    // The price a configured model of this id gets; an id no rule matches is not one a request can be priced by.
    const ruled = rulesPrice(catalogId, id);
    if (ruled === null) continue;
    const limits = sourceLimits(catalogId, id);
    out.push(Object.freeze({
      provider: catalogId,
      id,
      name: name ?? id,
      price: ruled.price,
      contextTokens: limits?.context ?? null,
      maxOutputTokens: outputLimit(catalogId, id),
      capabilities: Object.freeze([]),
      releaseDate: null,
      priceSource: RULES_SOURCE,
      limitsSource: limits === null ? null : LIMITS_SOURCE,
    }));
  }
  return out;
}

/**
 * The second source's models of a catalog provider that the catalog lacks, in the package's order. Prices are as of
 * the first call (a dated price change in the package shows after a restart; a configured model's price follows it).
 */
export function sourceModels(catalogId: string): readonly SourceModel[] {
  let found = cache.get(catalogId);
  if (found === undefined) cache.set(catalogId, (found = Object.freeze(listed(catalogId))));
  return found;
}

/** Is a listed model one of these (rather than the catalog's)? */
export const isSourceModel = (m: CatalogModel): m is SourceModel => 'priceSource' in m;

export function sourceModel(catalogId: string, modelId: string): SourceModel | null {
  return sourceModels(catalogId).find((m) => m.id === modelId) ?? null;
}
