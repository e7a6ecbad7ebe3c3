// The one cost engine (DESIGN.md decision 5). Prices are USD per 1M tokens, per provider with per-model
// overrides, else from the catalog (config/pricing.ts); each cost carries where its price came from. Arithmetic is done in integer pico-dollars so that sums agree to the cent across the row, the
// metrics and the API: a price with up to six decimals times a token count is exact.

import type { Price, PriceTier, ProviderConfig, ServiceTierPrice } from '../config/types.js';
import { resolvePrice, type PriceSource } from '../config/pricing.js';
import { MAX_PRICE_PER_MTOK } from '../config/schema.js';
import type { Usage } from './types.js';

export type { PriceSource };

export interface Cost {
  /** What is billed: 0 for subscription and free providers. 0 too when `priceSource` is `none`: see `costKnown`. */
  readonly cost: number;
  /** What the request would cost at list price. */
  readonly listCost: number;
  /**
   * Where the price came from: `config`, `catalog@<version>`, `genai-prices@<version>`, or `none` (no price anywhere). A combo's cost, the sum
   * of its attempts', says `none` when any attempt's did, else the first attempt's source. computeCost always sets
   * it; a cost made by hand (tests, tools) may leave it out, and its row then records ''.
   */
  readonly priceSource?: PriceSource;
}

export const ZERO_COST: Cost = Object.freeze({ cost: 0, listCost: 0, priceSource: 'none' });

const PICO_PER_MICRO = 1_000_000; // price per 1M tokens -> pico-dollars per token

/** The effective price of one model: the provider's price with the model's overrides on top, else the catalog's. */
export function effectivePrice(provider: ProviderConfig, modelId: string): Price | null {
  return resolvePrice(provider, modelId).price;
}

function pico(tokens: number | null, pricePerMillion: number): number {
  return tokens ? Math.round(tokens * pricePerMillion * PICO_PER_MICRO) : 0;
}

/**
 * The price a request pays: the base price, or, when its prompt (input + cache reads + cache writes) is longer than a
 * tier's `above_input_tokens`, the highest such tier's prices on top of the base (the whole request is priced at the
 * tier, as providers bill long-context requests); then, for a call served at another service tier, that tier's prices
 * on top (atServiceTier).
 */
export function priceFor(p: Price, u: Usage): Price {
  const long = p.tiers === undefined || p.tiers.length === 0 ? p : longContext(p, p.tiers, u);
  return u.serviceTier === undefined ? long : atServiceTier(long, u);
}

/**
 * The price of a call the provider served at another service tier (Usage.serviceTier: OpenAI's `flex`, `priority`):
 * the base with the tier's prices (`price.service_tiers.<tier>`) on top; the base itself for the standard tier, or a
 * tier the price does not name.
 */
function atServiceTier(p: Price, u: Usage): Price {
  if (u.serviceTier === undefined || p.service_tiers === undefined || !Object.hasOwn(p.service_tiers, u.serviceTier)) return p;
  return { ...p, ...p.service_tiers[u.serviceTier] };
}

function longContext(p: Price, tiers: readonly PriceTier[], u: Usage): Price {
  const prompt = (u.input ?? 0) + (u.cached ?? 0) + (u.cacheWrite ?? 0);
  let chosen: PriceTier | null = null;
  for (const t of tiers) if (prompt > t.above_input_tokens && (chosen === null || t.above_input_tokens > chosen.above_input_tokens)) chosen = t;
  if (chosen === null) return p;
  const { above_input_tokens: _above, ...prices } = chosen;
  return { ...p, ...prices };
}

/**
 * The price of a cache write that lasts an hour: `cache_write_1h`, else twice the input price, as Anthropic bills it
 * (the one provider that reports such writes; its 5-minute writes are the `cache_write` price, 1.25 times the input).
 * Bounded by the config's price ceiling, so a call's cost stays within the row's `cost` column (MAX_CALL_TOKENS).
 */
export function hourWritePrice(p: Price): number {
  return p.cache_write_1h ?? Math.min(2 * p.input, MAX_PRICE_PER_MTOK);
}

/**
 * Cached reads and cache writes fall back to the input price, reasoning to the output price; cache writes that last
 * an hour are priced apart (hourWritePrice), and so are the audio parts of input and output (`input_audio`,
 * `output_audio`, falling back to the input and output prices; a part is never priced past its whole); tiers apply
 * (priceFor).
 */
export function listCostPico(u: Usage, price: Price): number {
  const p = priceFor(price, u);
  const hour = u.cacheWrite1h ?? 0;
  const searches = u.webSearches ?? 0;
  const audioIn = u.audioInput === undefined || u.input === null ? 0 : Math.min(u.audioInput, u.input);
  const audioOut = u.audioOutput === undefined || u.output === null ? 0 : Math.min(u.audioOutput, u.output);
  return (
    (searches === 0 ? 0 : pico(searches, (p.web_search_per_1k ?? 0) * 1000)) +
    pico(u.input === null ? null : u.input - audioIn, p.input) +
    (audioIn === 0 ? 0 : pico(audioIn, p.input_audio ?? p.input)) +
    pico(u.cached, p.cached ?? p.input) +
    pico(u.cacheWrite === null ? null : u.cacheWrite - hour, p.cache_write ?? p.input) +
    pico(hour, hour === 0 ? 0 : hourWritePrice(p)) +
    pico(u.output === null ? null : u.output - audioOut, p.output) +
    (audioOut === 0 ? 0 : pico(audioOut, p.output_audio ?? p.output)) +
    pico(u.reasoning, p.reasoning ?? p.output)
  );
}

/**
 * What a provider bills a web search at when its price does not say (USD per 1,000): Anthropic's published $10 for
 * its server-side `web_search` tool, OpenAI's $10 per 1,000 `web_search` tool calls of the Responses API (the two
 * searches an answer counts: Usage.webSearches).
 */
const WEB_SEARCH_PER_1K: Partial<Record<ProviderConfig['format'], number>> = { anthropic: 10, 'openai-responses': 10 };

/** The formats whose `flex` tier is half price when the price does not say (OpenAI: "Batch API rates", 50 % off). */
const FLEX_AT_HALF: ReadonlySet<ProviderConfig['format']> = new Set(['openai', 'openai-responses']);

/** Every token price of `p` halved (its own fallbacks followed first: cached to input, reasoning to output...). */
function halved(p: Price): ServiceTierPrice {
  const half = (n: number): number => n / 2;
  return {
    input: half(p.input), output: half(p.output), cached: half(p.cached ?? p.input), cache_write: half(p.cache_write ?? p.input),
    cache_write_1h: half(hourWritePrice(p)), reasoning: half(p.reasoning ?? p.output),
    input_audio: half(p.input_audio ?? p.input), output_audio: half(p.output_audio ?? p.output),
  };
}

/**
 * The vendor whose published rule a format's defaults are (the catalog's id for it). A provider linked to another
 * vendor's catalog (Groq, xAI, OpenRouter, DeepSeek...) speaks the format but bills its own way (Groq's flex is at its
 * on-demand price): it takes no default, its price says. A provider linked to no catalog takes them.
 */
const DEFAULTS_OF: Partial<Record<ProviderConfig['format'], string>> = { anthropic: 'anthropic', openai: 'openai', 'openai-responses': 'openai' };

/** The price as a call needs it: the defaults of its format for what the price leaves out (searches, flex). */
function withDefaults(provider: ProviderConfig, found: Price, u: Usage): Price {
  const catalog = provider.catalog ?? '';
  if (catalog !== '' && catalog !== DEFAULTS_OF[provider.format]) return found;
  let price = found;
  const searchDefault = WEB_SEARCH_PER_1K[provider.format];
  if (u.webSearches && price.web_search_per_1k === undefined && searchDefault !== undefined) price = { ...price, web_search_per_1k: searchDefault };
  if (u.serviceTier === 'flex' && FLEX_AT_HALF.has(provider.format) && (price.service_tiers === undefined || !Object.hasOwn(price.service_tiers, 'flex'))) {
    // Half of what the call would pay at the standard tier: its long-context tier's prices when its prompt has one.
    const standard = price.tiers === undefined || price.tiers.length === 0 ? price : longContext(price, price.tiers, u);
    price = { ...price, service_tiers: { ...price.service_tiers, flex: halved(standard) } };
  }
  return price;
}

export function computeCost(provider: ProviderConfig, modelId: string, u: Usage): Cost {
  const { price: found, source } = resolvePrice(provider, modelId);
  if (!found) return ZERO_COST;
  const price = u.webSearches || u.serviceTier !== undefined ? withDefaults(provider, found, u) : found;
  const listCost = listCostPico(u, price) / 1e12;
  return { cost: provider.group === 'paid' ? listCost : 0, listCost, priceSource: source };
}

const round12 = (n: number): number => Math.round(n * 1e12) / 1e12;

/** Two costs together (a combo request's attempts): `none` wins the source, since the sum is then not known. */
export function addCosts(sum: Cost | null | undefined, next: Cost): Cost {
  if (sum === null || sum === undefined) return next;
  return {
    cost: round12(sum.cost + next.cost),
    listCost: round12(sum.listCost + next.listCost),
    ...(sum.priceSource === 'none' || next.priceSource === 'none' ? { priceSource: 'none' as const } : sum.priceSource === undefined ? {} : { priceSource: sum.priceSource }),
  };
}

/**
 * Whether the billed cost of a record is known: not when a paid model with no price anywhere spent tokens (its `cost`
 * of 0 then means "unknown", and analytics and budgets say so; docs/catalog.md).
 */
export function costKnown(r: { readonly providerGroup: string; readonly totalTokens: number; readonly cost: Cost }): boolean {
  return !(r.providerGroup === 'paid' && r.cost.priceSource === 'none' && r.totalTokens > 0);
}
