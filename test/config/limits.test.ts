// Output limits of the models the catalog lacks (config/limits.ts): llm-info's figures, taken at build time
// (scripts/limits-index.mjs), matched as a user writes the id (exact, undated to the one dated id, a dashed, dotted or
// `@` date, a dotted version), restricted to the vendors the catalog provider serves; the catalog's limit first and
// the YAML's over both, filled in at load so that the clamp and a translated request's default max_tokens use it.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseConfig } from '../../src/config/load.js';
import { catalogOutputLimit } from '../../src/config/catalog-prices.js';
import { LIMITS_INDEX, LIMITS_VERSION } from '../../src/config/generated/limits-index.js';
import { comparableId, LIMITS_SOURCE, outputLimit, sourceLimits } from '../../src/config/limits.js';
import { resolveModel } from '../../src/routing/resolve.js';

const require = createRequire(import.meta.url);
const llmInfo = require('llm-info') as {
  AllModels: string[];
  ModelInfoMap: Record<string, { provider: string; contextWindowTokenLimit: number; outputTokenLimit: number | null }>;
};

t.test('the package is pinned exactly in devDependencies, and the index is its version and its figures', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> };
  t.equal(pkg.devDependencies['llm-info'], LIMITS_VERSION, 'pinned exactly (no range)');
  t.equal(LIMITS_SOURCE, `llm-info@${LIMITS_VERSION}`);
  const differ: string[] = [];
  for (const id of llmInfo.AllModels) {
    const m = llmInfo.ModelInfoMap[id]!;
    if (JSON.stringify(LIMITS_INDEX[m.provider]?.[id]) !== JSON.stringify([m.contextWindowTokenLimit, m.outputTokenLimit])) differ.push(id);
  }
  t.ok(llmInfo.AllModels.length > 30, `${llmInfo.AllModels.length} models compared`);
  t.same(differ, []);
});

t.test('a model the catalog lacks: its exact id, and its undated id to the one dated id of that stem', async (t) => {
  t.equal(catalogOutputLimit('anthropic', 'claude-sonnet-4-5'), null, 'the first catalog lacks it');
  t.same(sourceLimits('anthropic', 'claude-sonnet-4-5-20250929'), { context: 200000, output: 64000 }, 'exact');
  t.equal(outputLimit('anthropic', 'claude-sonnet-4-5-20250929'), 64000);
  t.equal(outputLimit('anthropic', 'claude-sonnet-4-5'), 64000, 'undated');
  t.equal(outputLimit('anthropic', 'claude-opus-4-5'), 64000);
  t.equal(outputLimit('anthropic', 'claude-haiku-4-5'), 64000);
  t.equal(outputLimit('google', 'gemini-3-pro-preview'), 65536);
  t.equal(outputLimit('openai', 'gpt-5.2'), 128000);
  t.same(sourceLimits('google', 'gemini-3-pro-preview'), { context: 1048576, output: 65536 }, 'with its context window');
});

t.test('ids as users write them: case, a dashed, dotted or @ date, a dotted version', async (t) => {
  for (const id of ['Claude-Sonnet-4-5', ' claude-sonnet-4-5-2025-09-29', 'claude-sonnet-4-5@20250929', 'claude-sonnet-4.5', 'claude-sonnet-4.5-2025.09.29']) {
    t.equal(outputLimit('anthropic', id), 64000, id);
  }
  t.equal(comparableId('gpt-4o-2024-08-06'), 'gpt-4o-20240806', "the package's own dashed dates compare the same way");
  t.equal(comparableId('gemini-2.5-pro-preview-06-05'), 'gemini-2-5-pro-preview-06-05', 'a month and day with no year is no date');
});

t.test('unknown -> null; a wrong date, a longer id or another vendor does not match', async (t) => {
  t.equal(sourceLimits('anthropic', 'claude-sonnet-9'), null);
  t.equal(outputLimit('anthropic', 'claude-sonnet-4-5-20990101'), null, 'a date the package does not list');
  t.equal(outputLimit('anthropic', 'claude-sonnet-4-5-extra'), null);
  t.equal(outputLimit('openai', 'claude-sonnet-4-5'), null, "an OpenAI catalog provider does not read Anthropic's models");
  t.equal(outputLimit('amazon-bedrock', 'claude-sonnet-4-5'), null, 'a host with its own ids reads none');
  t.equal(outputLimit('no-such-catalog', 'claude-sonnet-4-5'), null);
  t.equal(outputLimit('google-vertex-anthropic', 'claude-sonnet-4-5@20250929'), 64000, 'Vertex serves Anthropic\'s models');
  t.equal(outputLimit('anthropic', 'toString'), null, 'an inherited property is no model');
  t.equal(outputLimit('toString', 'claude-sonnet-4-5'), null, 'nor a provider');
});

t.test('the first catalog wins where it has a limit', async (t) => {
  // llm-info says gpt-4o 4096 and grok-4 32768; the catalog 16384 and 64000.
  t.equal(LIMITS_INDEX.openai!['gpt-4o']![1], 4096);
  t.equal(outputLimit('openai', 'gpt-4o'), 16384);
  t.equal(LIMITS_INDEX.xai!['grok-4']![1], 32768);
  t.equal(outputLimit('xai', 'grok-4'), 64000);
});

t.test('at load: a listed model the catalog lacks gets the limit, the YAML value wins, the route carries it', async (t) => {
  const base = { group: 'paid', format: 'anthropic', base_url: 'http://127.0.0.1:9', auth: { type: 'none' } };
  const cfg = parseConfig({ providers: {
    anthropic: { ...base, models: { 'claude-sonnet-4-5': {}, 'claude-opus-4-5': { max_output_tokens: 1000 }, 'in-house': {} } },
    off: { ...base, catalog: '', models: { 'claude-sonnet-4-5': {} } },
  } }, {});
  const models = cfg.providers.anthropic!.models;
  t.equal(models['claude-sonnet-4-5']!.max_output_tokens, 64000);
  t.equal(models['claude-opus-4-5']!.max_output_tokens, 1000, 'the YAML value wins');
  t.equal(models['in-house']!.max_output_tokens, undefined);
  t.equal(cfg.providers.off!.models['claude-sonnet-4-5']!.max_output_tokens, undefined, "catalog: '' turns it off");
  t.equal(resolveModel(cfg, 'anthropic/claude-sonnet-4-5').modelConfig?.max_output_tokens, 64000, 'what the clamp reads');
});

t.test('an id the catalog lists under another spelling takes the catalog limit, not the second source\'s', async (t) => {
  // llm-info says gpt-4o and gpt-4o-mini 4096, gpt-4 4096, grok-4 32768, deepseek-chat 8000; the catalog 16384, 8192,
  // 64000 and 8192. Written another way (an Azure deployment named `GPT-4o`), the id missed the catalog's exact key
  // and matched the package's short figure: a 16,000-token request was clamped to 4,096.
  t.equal(outputLimit('openai', 'GPT-4o'), 16384);
  t.equal(outputLimit('azure', 'GPT-4o-mini'), 16384);
  t.equal(outputLimit('openai', 'GPT-4'), 8192);
  t.equal(outputLimit('xai', 'Grok-4'), 64000);
  t.equal(outputLimit('deepseek', 'DeepSeek-Chat'), 8192);
  t.equal(outputLimit('google-vertex-anthropic', 'claude-opus-4-1'), 32000, "the catalog's one dated id of that stem");
  t.equal(outputLimit('anthropic', 'Claude-Sonnet-4-5'), 64000, 'a model the catalog lacks still reads the package');
});
