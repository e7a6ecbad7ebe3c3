// Which price, limits and capabilities a configured model has: the YAML's, and where it says nothing, the catalog's
// (config/catalog.ts; its prices and limits as config/catalog-prices.ts holds them), and for a model the catalog does
// not list, the second price source's (config/price-rules.ts) and the second limits source's (config/limits.ts). YAML
// overrides win. Every price says where it came from, and the row records that (`price_source`): `config`,
// `catalog@<version>`, `genai-prices@<version>`, or `none` (docs/catalog.md).

import { CATALOG_SOURCE, catalogIdOf, catalogPrice } from './catalog-prices.js';
import { outputLimit } from './limits.js';
import type { Config, Price, PriceTier, ProviderConfig } from './types.js';
import { RULES_SOURCE, rulesPrice } from './price-rules.js';
import { own } from '../core/own.js';

/**
 * `config`: the YAML prices it; `catalog@<version>`: the catalog does (YAML fields on top); `genai-prices@<version>`:
 * the second price source does, for a model the catalog lacks (YAML fields on top); `none`: nobody does.
 */
export type PriceSource = 'config' | `catalog@${string}` | `genai-prices@${string}` | 'none';

export interface ResolvedPrice {
  readonly price: Price | null;
  readonly source: PriceSource;
}

const NO_PRICE: ResolvedPrice = Object.freeze({ price: null, source: 'none' });
/** A resolved price and until when it holds (the second source's dated price changes; Infinity for all others). */
type Cached = readonly [ResolvedPrice, number];
const cache = new WeakMap<ProviderConfig, Map<string, Cached>>();

function resolve(provider: ProviderConfig, modelId: string): Cached {
  const base = provider.price;
  const over = own(provider.models, modelId)?.price;
  // The YAML prices it: the provider's price with the model's overrides, or a model price with input and output.
  if (base !== undefined || (over?.input !== undefined && over.output !== undefined)) {
    // A model's own tiers replace the provider's (a tier list is one price schedule, not fields to merge).
    return [{ price: { ...(base ?? { input: 0, output: 0 }), ...(over ?? {}) } as Price, source: 'config' }, Infinity];
  }
  if (!provider.catalog) return [NO_PRICE, Infinity];
  const price = catalogPrice(provider.catalog, modelId);
  if (price) return [{ price: onTop(price, over), source: CATALOG_SOURCE }, Infinity];
  const ruled = rulesPrice(provider.catalog, modelId);
  if (ruled?.price) return [{ price: onTop(ruled.price, over), source: RULES_SOURCE }, ruled.changesAt];
  return [NO_PRICE, ruled?.changesAt ?? Infinity];
}

/**
 * A found price with the YAML's model fields on top. A field the YAML sets holds at every prompt length: the found
 * price's long-context tiers keep only the fields the YAML leaves (a tier left with none is dropped); tiers in the
 * YAML replace the found ones.
 */
function onTop(found: Price, over: Partial<Price> | undefined): Price {
  if (over === undefined) return found;
  const merged = { ...found, ...over } as Price;
  if (over.tiers !== undefined || found.tiers === undefined) return merged;
  const tiers = found.tiers
    .map((t) => Object.fromEntries(Object.entries(t).filter(([k]) => k === 'above_input_tokens' || !Object.hasOwn(over, k))) as unknown as PriceTier)
    .filter((t) => Object.keys(t).length > 1);
  return { ...merged, tiers };
}

/** The price of one model and its source; computed once per frozen provider row and model (again at a dated change). */
export function resolvePrice(provider: ProviderConfig, modelId: string): ResolvedPrice {
  let byModel = cache.get(provider);
  if (byModel === undefined) cache.set(provider, (byModel = new Map()));
  let found = byModel.get(modelId);
  if (found === undefined || (found[1] !== Infinity && Date.now() >= found[1])) {
    const [price, until] = resolve(provider, modelId);
    found = [Object.freeze(price), until];
    if (byModel.size < 10_000 || byModel.has(modelId)) byModel.set(modelId, found); // unlisted ids come from clients: bounded
  }
  return found[0];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * At load, on the validated tree: each provider's `catalog` becomes the resolved catalog id ('' for none), and each
 * listed model the YAML leaves without `max_output_tokens` takes the catalog's, or for a model the catalog has no limit
 * of, the second limits source's (config/limits.ts), so the clamp (and a translated request's default max_tokens) use
 * it. Capabilities are not filled in: an applied list removes what it lacks, and the catalog has no structured-output
 * flag (docs/catalog.md); `tollgate providers add` writes them for the user to see.
 */
export function applyCatalog(tree: Record<string, unknown>): void {
  const providers = isObject(tree.providers) ? tree.providers : {};
  for (const [pid, p] of Object.entries(providers)) {
    if (!isObject(p)) continue;
    const id = catalogIdOf(pid, p as { catalog?: string });
    p.catalog = id ?? '';
    if (id === null || !isObject(p.models)) continue;
    for (const [mid, m] of Object.entries(p.models)) {
      const limit = outputLimit(id, mid);
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
    message: `paid model ${provider}/${model} has no price in the YAML or the catalog (${CATALOG_SOURCE}, ${RULES_SOURCE}): its cost is recorded as unknown; set providers.${provider}.models.${model}.price or providers.${provider}.price`,
  }));
}
