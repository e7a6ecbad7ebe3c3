// Output (and context) limits of a model: the catalog's (config/catalog-prices.ts) where it has one, else, for a model
// the catalog lacks, the second limits source's: llm-info, taken from the package at build time
// (scripts/limits-index.mjs, into generated/limits-index.ts; the gateway never loads the package). The YAML's
// `max_output_tokens` wins over both (config/pricing.ts applyCatalog). docs/catalog.md, "Output limits".
//
// A model id is matched as a user writes it: lower-cased and trimmed, a date written with dashes, dots or after `@`
// (`-2025-09-29`, `@20250929`) read as the package's `-20250929`, a version with a dot (`4.5`) as with a dash (`4-5`);
// then the package's id written the same way, or, for an id with no date, the one dated id of that stem
// (`claude-sonnet-4-5` is `claude-sonnet-4-5-20250929`; none when two dated ids share the stem). Only the models of
// the vendors the catalog provider serves are looked at, as the second price source matches it.

import { catalogOutputLimit } from './catalog-prices.js';
import { CATALOG_INDEX } from './generated/catalog-index.js';
import { LIMITS_INDEX, LIMITS_VENDORS, LIMITS_VERSION } from './generated/limits-index.js';

/** The package and version the limits of models the catalog lacks come from. */
export const LIMITS_SOURCE = `llm-info@${LIMITS_VERSION}` as const;

/** A model's token limits; null where the source has none. */
export interface ModelLimits {
  readonly context: number | null;
  readonly output: number | null;
}

const DATE = /[-@](20\d{2})[-.]?(0[1-9]|1[0-2])[-.]?(0[1-9]|[12]\d|3[01])(?=$|[-:])/g;
const DATED = /-20\d{6}$/;

/** An id as it is compared: lower-case, a date as `-YYYYMMDD`, a dot between digits as a dash. */
export function comparableId(id: string): string {
  return id.toLowerCase().trim().replace(DATE, '-$1$2$3').replace(/(\d)\.(?=\d)/g, '$1-');
}

/** Ids matched as a user writes them: the exact comparable id, else the one dated id of that stem. */
interface Matcher<T> {
  /** comparable id -> value */
  readonly byId: ReadonlyMap<string, T>;
  /** comparable id with its date taken off -> the value of each dated id of that stem */
  readonly byStem: ReadonlyMap<string, readonly T[]>;
}

function matcher<T>(entries: Iterable<readonly [string, T]>): Matcher<T> {
  const byId = new Map<string, T>();
  const byStem = new Map<string, T[]>();
  for (const [id, value] of entries) {
    const key = comparableId(id);
    if (!byId.has(key)) byId.set(key, value);
    if (DATED.test(key)) {
      const stem = key.replace(DATED, '');
      byStem.set(stem, [...(byStem.get(stem) ?? []), value]);
    }
  }
  return { byId, byStem };
}

function match<T>({ byId, byStem }: Matcher<T>, key: string): T | undefined {
  const exact = byId.get(key);
  if (exact !== undefined) return exact;
  const dated = DATED.test(key) ? undefined : byStem.get(key);
  return dated?.length === 1 ? dated[0] : undefined;
}

const vendors = new Map<string, Matcher<ModelLimits>>();

function vendorModels(vendor: string): Matcher<ModelLimits> {
  let found = vendors.get(vendor);
  if (found === undefined) {
    const entries = Object.entries(LIMITS_INDEX[vendor] ?? {}).map(([id, [context, output]]) => [id, Object.freeze({ context, output })] as const);
    vendors.set(vendor, (found = matcher(entries)));
  }
  return found;
}

/** The second source's limits of a model of a catalog provider; null when it does not know the model. */
export function sourceLimits(catalogId: string, modelId: string): ModelLimits | null {
  if (!Object.hasOwn(LIMITS_VENDORS, catalogId)) return null;
  const key = comparableId(modelId);
  for (const vendor of LIMITS_VENDORS[catalogId]!) {
    const found = match(vendorModels(vendor), key);
    if (found !== undefined) return found;
  }
  return null;
}

const catalogs = new Map<string, Matcher<number>>();

/**
 * The catalog's output limit of a model it lists under another spelling (`GPT-4o` for its `gpt-4o`), matched as the
 * second source is: the package's older entries are short (gpt-4o 4,096; the catalog 16,384), and the catalog's figure
 * comes first for the model, however its id is written.
 */
function catalogLimitAsWritten(catalogId: string, modelId: string): number | undefined {
  let found = catalogs.get(catalogId);
  if (found === undefined) {
    const entries = Object.entries(Object.hasOwn(CATALOG_INDEX, catalogId) ? CATALOG_INDEX[catalogId]! : {}).flatMap(([id, [limit]]) => (limit === null ? [] : [[id, limit] as const]));
    catalogs.set(catalogId, (found = matcher(entries)));
  }
  return match(found, comparableId(modelId));
}

/**
 * A model's output token limit: the catalog's, else the second source's (where the catalog lists the model the source
 * matched under another spelling, the catalog's); null when neither has one.
 */
export function outputLimit(catalogId: string, modelId: string): number | null {
  const exact = catalogOutputLimit(catalogId, modelId);
  if (exact !== null) return exact;
  const source = sourceLimits(catalogId, modelId);
  return source === null ? null : (catalogLimitAsWritten(catalogId, modelId) ?? source.output);
}
