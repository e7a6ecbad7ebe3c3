// The one cost engine (DESIGN.md decision 5). Prices are USD per 1M tokens, per provider with per-model
// overrides. Arithmetic is done in integer pico-dollars so that sums agree to the cent across the row, the
// metrics and the API: a price with up to six decimals times a token count is exact.

import type { Price, ProviderConfig } from '../config/types.js';
import type { Usage } from './types.js';
import { own } from '../core/own.js';

export interface Cost {
  /** What is billed: 0 for subscription and free providers. */
  readonly cost: number;
  /** What the request would cost at list price. */
  readonly listCost: number;
}

export const ZERO_COST: Cost = Object.freeze({ cost: 0, listCost: 0 });

const PICO_PER_MICRO = 1_000_000; // price per 1M tokens -> pico-dollars per token

/** The effective price of one model: the provider's price with the model's overrides on top. */
export function effectivePrice(provider: ProviderConfig, modelId: string): Price | null {
  const base = provider.price;
  const over = own(provider.models, modelId)?.price;
  if (!base && !(over?.input !== undefined && over.output !== undefined)) return null;
  return { ...(base ?? { input: 0, output: 0 }), ...(over ?? {}) } as Price;
}

function pico(tokens: number | null, pricePerMillion: number): number {
  return tokens ? Math.round(tokens * pricePerMillion * PICO_PER_MICRO) : 0;
}

/** Cached reads and cache writes fall back to the input price, reasoning to the output price. */
export function listCostPico(u: Usage, p: Price): number {
  return (
    pico(u.input, p.input) +
    pico(u.cached, p.cached ?? p.input) +
    pico(u.cacheWrite, p.cache_write ?? p.input) +
    pico(u.output, p.output) +
    pico(u.reasoning, p.reasoning ?? p.output)
  );
}

export function computeCost(provider: ProviderConfig, modelId: string, u: Usage): Cost {
  const price = effectivePrice(provider, modelId);
  if (!price) return ZERO_COST;
  const listCost = listCostPico(u, price) / 1e12;
  return { cost: provider.group === 'paid' ? listCost : 0, listCost };
}
