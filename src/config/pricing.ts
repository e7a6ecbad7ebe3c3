// Which price, limits and capabilities a configured model has: the YAML's, and where it says nothing, the catalog's
// (config/catalog.ts; its prices and limits as config/catalog-prices.ts holds them). YAML overrides win. Every price
// says where it came from, and the row records that (`price_source`): `config`, `catalog@<version>`, or `none`
// (docs/catalog.md).

import { CATALOG_SOURCE, catalogIdOf, catalogOutputLimit, catalogPrice } from './catalog-prices.js';
import type { Config, Price, ProviderConfig } from './types.js';
import { own } from '../core/own.js';

/** `config`: the YAML prices it; `catalog@<version>`: the catalog does (YAML fields on top); `none`: nobody does. */
export type PriceSource = 'config' | `catalog@${string}` | 'none';

export interface ResolvedPrice {
  readonly price: Price | null;
  readonly source: PriceSource;
}

const NO_PRICE: ResolvedPrice = Object.freeze({ price: null, source: 'none' });
const cache = new WeakMap<ProviderConfig, Map<string, ResolvedPrice>>();

function resolve(provider: ProviderConfig, modelId: string): ResolvedPrice {
  const base = provider.price;
  const over = own(provider.models, modelId)?.price;
  // The YAML prices it: the provider's price with the model's overrides, or a model price with input and output.
  if (base !== undefined || (over?.input !== undefined && over.output !== undefined)) {
    // A model's own tiers replace the provider's (a tier list is one price schedule, not fields to merge).
    return { price: { ...(base ?? { input: 0, output: 0 }), ...(over ?? {}) } as Price, source: 'config' };
  }
  const price = provider.catalog ? catalogPrice(provider.catalog, modelId) : null;
  if (price) return { price: { ...price, ...(over ?? {}) } as Price, source: CATALOG_SOURCE };
  return NO_PRICE;
}

/** The price of one model and its source; computed once per frozen provider row and model. */
export function resolvePrice(provider: ProviderConfig, modelId: string): ResolvedPrice {
  let byModel = cache.get(provider);
  if (byModel === undefined) cache.set(provider, (byModel = new Map()));
  let found = byModel.get(modelId);
  if (found === undefined) {
    found = Object.freeze(resolve(provider, modelId));
    if (byModel.size < 10_000) byModel.set(modelId, found); // unlisted model ids come from clients: keep it bounded
  }
  return found;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * At load, on the validated tree: each provider's `catalog` becomes the resolved catalog id ('' for none), and each
 * listed model the YAML leaves without `max_output_tokens` takes the catalog's, so the clamp (and a translated
 * request's default max_tokens) use it. Capabilities are not filled in: an applied list removes what it lacks, and the
 * catalog has no structured-output flag (docs/catalog.md); `tollgate providers add` writes them for the user to see.
 */
export function applyCatalog(tree: Record<string, unknown>): void {
  const providers = isObject(tree.providers) ? tree.providers : {};
  for (const [pid, p] of Object.entries(providers)) {
    if (!isObject(p)) continue;
    const id = catalogIdOf(pid, p as { catalog?: string });
    p.catalog = id ?? '';
    if (id === null || !isObject(p.models)) continue;
    for (const [mid, m] of Object.entries(p.models)) {
      const limit = catalogOutputLimit(id, mid);
      if (isObject(m) && m.max_output_tokens === undefined && limit !== null) m.max_output_tokens = limit;
    }
  }
}

/** Listed models of paid providers that no price covers: their cost is recorded as unknown. */
export function unpricedModels(cfg: Config): { provider: string; model: string }[] {
  const out: { provider: string; model: string }[] = [];
  for (const [pid, p] of Object.entries(cfg.providers)) {
    if (p.group !== 'paid') continue;
    for (const mid of Object.keys(p.models)) if (resolvePrice(p, mid).source === 'none') out.push({ provider: pid, model: mid });
  }
  return out;
}

/** What a load should warn about (logged at start and on every reload; printed by check-config). */
export function pricingWarnings(cfg: Config): { path: string; message: string }[] {
  return unpricedModels(cfg).map(({ provider, model }) => ({
    path: `providers.${provider}.models.${model}`,
    message: `paid model ${provider}/${model} has no price in the YAML or the catalog (${CATALOG_SOURCE}): its cost is recorded as unknown; set providers.${provider}.models.${model}.price or providers.${provider}.price`,
  }));
}
