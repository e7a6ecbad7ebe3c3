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

interface VendorModels {
  /** comparable id -> limits */
  readonly byId: ReadonlyMap<string, ModelLimits>;
  /** comparable id with its date taken off -> the limits of each dated id of that stem */
  readonly byStem: ReadonlyMap<string, readonly ModelLimits[]>;
}

const vendors = new Map<string, VendorModels>();

function vendorModels(vendor: string): VendorModels {
  let found = vendors.get(vendor);
  if (found !== undefined) return found;
  const byId = new Map<string, ModelLimits>();
  const byStem = new Map<string, ModelLimits[]>();
  for (const [id, [context, output]] of Object.entries(LIMITS_INDEX[vendor] ?? {})) {
    const key = comparableId(id);
    const limits = Object.freeze({ context, output });
    if (!byId.has(key)) byId.set(key, limits);
    if (DATED.test(key)) {
      const stem = key.replace(DATED, '');
      byStem.set(stem, [...(byStem.get(stem) ?? []), limits]);
    }
  }
  vendors.set(vendor, (found = { byId, byStem }));
  return found;
}

/** The second source's limits of a model of a catalog provider; null when it does not know the model. */
export function sourceLimits(catalogId: string, modelId: string): ModelLimits | null {
  if (!Object.hasOwn(LIMITS_VENDORS, catalogId)) return null;
  const key = comparableId(modelId);
  for (const vendor of LIMITS_VENDORS[catalogId]!) {
    const { byId, byStem } = vendorModels(vendor);
    const exact = byId.get(key);
    if (exact !== undefined) return exact;
    const dated = DATED.test(key) ? undefined : byStem.get(key);
    if (dated?.length === 1) return dated[0]!;
  }
  return null;
}

/** A model's output token limit: the catalog's, else the second source's; null when neither has one. */
export function outputLimit(catalogId: string, modelId: string): number | null {
  return catalogOutputLimit(catalogId, modelId) ?? sourceLimits(catalogId, modelId)?.output ?? null;
}
