// The second price source (config/price-rules.ts): for a model the pinned catalog lacks, the gateway prices it the way
// @pydantic/genai-prices' own calcPrice does. Checked id by id against the package itself (a devDependency, loaded by
// this test only): every model's rule strings, dated and cased variants, the first catalog's ids, through each
// catalog provider the index maps; for each, the dollars Tollgate's cost engine computes from the price (below and
// above a long-context tier, with cache reads and writes, audio in and out, reasoning) equal the package's, and a
// model the package prices by something a row does not count, or lists with no price, is left unpriced rather than
// priced by a wider rule or as free. A YAML field on top holds past the tiers.

import t from 'tap';
import { createRequire } from 'node:module';
import { rulesPrice, RULES_SOURCE } from '../../src/config/price-rules.js';
import { resolvePrice } from '../../src/config/pricing.js';
import { CATALOG_INDEX } from '../../src/config/generated/catalog-index.js';
import { PRICES_VERSION } from '../../src/config/generated/prices-index.js';
import { listCostPico } from '../../src/ledger/cost.js';
import type { Price, ProviderConfig } from '../../src/config/types.js';
import type { Usage } from '../../src/ledger/types.js';

const require = createRequire(import.meta.url);
const genai = require('@pydantic/genai-prices') as {
  calcPrice: (u: Record<string, number>, id: string, o: { providerId: string; timestamp?: Date }) => null | { total_price: number; model: { id: string; prices: unknown } };
  findProvider: (o: { providerId: string }) => undefined | { id: string; models: { id: string; match: unknown; prices: unknown }[] };
};

/** Token buckets as Tollgate keeps them (non-overlapping) and as the package takes them (input_tokens the total). */
const USAGES: { name: string; u: Usage; pkg: Record<string, number> }[] = [
  { name: 'short', u: { input: 1000, cached: 200, cacheWrite: 300, output: 500, reasoning: 0 } as Usage,
    pkg: { input_tokens: 1500, cache_read_tokens: 200, cache_write_tokens: 300, output_tokens: 500 } },
  { name: 'long (past a 200k tier)', u: { input: 250_000, cached: 10_000, cacheWrite: 5_000, output: 1_000, reasoning: 0 } as Usage,
    pkg: { input_tokens: 265_000, cache_read_tokens: 10_000, cache_write_tokens: 5_000, output_tokens: 1_000 } },
  { name: 'plain', u: { input: 7000, cached: 0, cacheWrite: 0, output: 3000, reasoning: 0 } as Usage, pkg: { input_tokens: 7000, output_tokens: 3000 } },
  // Audio in and out (parts of input and output) and reasoning (a bucket of its own here, a part of output there).
  { name: 'audio and reasoning', u: { input: 2000, audioInput: 500, cached: 100, cacheWrite: 0, output: 800, audioOutput: 200, reasoning: 300 } as Usage,
    pkg: { input_tokens: 2100, input_audio_tokens: 500, cache_read_tokens: 100, output_tokens: 1100, output_audio_tokens: 200, output_reasoning_tokens: 300 } },
];

/** Every string a match rule names (equals, starts_with, ends_with, contains), to make ids the rules are about. */
function ruleStrings(rule: unknown, out: string[] = []): string[] {
  if (rule === null || typeof rule !== 'object') return out;
  for (const [k, v] of Object.entries(rule)) {
    if (Array.isArray(v)) for (const r of v) ruleStrings(r, out);
    else if (typeof v === 'string' && k !== 'regex') out.push(v);
  }
  return out;
}

const LEFT_OUT_PROVIDERS = new Set(['moonshotai-cn']);

t.test('the source is named with the package version the index was built from', async (t) => {
  const pkg = require('../../package.json') as { devDependencies: Record<string, string> };
  t.equal(pkg.devDependencies['@pydantic/genai-prices'], PRICES_VERSION, 'package.json pins the version the index says');
  t.equal(RULES_SOURCE, `genai-prices@${PRICES_VERSION}`);
});

t.test('every id priced as the package prices it, in dollars', async (t) => {
  let compared = 0;
  let unpriced = 0;
  let none = 0;
  const failures: string[] = [];
  for (const catalogId of Object.keys(CATALOG_INDEX)) {
    const pkgProvider = genai.findProvider({ providerId: catalogId });
    const ids = new Set<string>(Object.keys(CATALOG_INDEX[catalogId]!));
    for (const m of pkgProvider?.models ?? []) {
      for (const s of [m.id, ...ruleStrings(m.match)]) {
        ids.add(s);
        ids.add(`${s}-20250929`);
        ids.add(`${s}-20251399`); // not a date: not rewritten
        ids.add(s.toUpperCase());
        ids.add(` ${s}-latest `);
        ids.add(s.replace(/-(20\d\d)-(\d\d)-(\d\d)/, '-$1$2$3')); // a dashed date written without dashes
      }
    }
    for (const id of ids) {
      const ours = rulesPrice(catalogId, id);
      const theirs = pkgProvider === undefined || LEFT_OUT_PROVIDERS.has(catalogId) ? null : genai.calcPrice(USAGES[2]!.pkg, id, { providerId: catalogId });
      if (theirs === null) {
        if (ours !== null) failures.push(`${catalogId} ${id}: the package has no price, ours ${JSON.stringify(ours)}`);
        none++;
        continue;
      }
      if (ours === null) {
        failures.push(`${catalogId} ${id}: the package prices it (${theirs.model.id}), ours finds no rule`);
        continue;
      }
      if (ours.price === null) {
        unpriced++;
        continue;
      }
      for (const { name, u, pkg } of USAGES) {
        let want: number;
        try {
          want = genai.calcPrice(pkg, id, { providerId: catalogId })!.total_price;
        } catch {
          continue; // the package refuses a usage its prices cannot split (e.g. cache writes with no write price)
        }
        const got = listCostPico(u, ours.price) / 1e12;
        if (Math.abs(got - want) > 1e-9 * Math.max(1, want)) failures.push(`${catalogId} ${id} ${name}: ours ${got}, the package ${want}`);
        else compared++;
      }
    }
  }
  t.same(failures.slice(0, 20), [], `${failures.length} differences`);
  t.ok(compared > 5000, `${compared} id and usage pairs priced alike (${unpriced} matched and left unpriced, ${none} unknown to both)`);
  t.ok(unpriced > 0 && none > 0, 'both kinds of miss were met');
});

t.test("the package's models that the gateway cannot bill are matched and left unpriced", async (t) => {
  // Listed by the package with an empty price (not known, not free): unpriced, not a known $0.
  t.same(rulesPrice('openrouter', 'google/lyria-3-pro-preview'), { price: null, changesAt: Infinity });
  // gpt-image-1 bills image tokens apart; without its own rule, a wider gpt- rule must not price it.
  t.same(rulesPrice('openai', 'gpt-image-1'), { price: null, changesAt: Infinity });
  // deepseek-chat's price depends on the time of day; the first catalog prices it, so the gateway never asks here.
  t.equal(rulesPrice('deepseek', 'deepseek-chat')?.price, null);
  t.equal(rulesPrice('no-such-provider', 'claude-sonnet-4-5'), null);
  t.equal(rulesPrice('moonshotai-cn', 'kimi-k2'), null, 'a China platform is not priced from the international list');
});

t.test('the models real clients use today, which the pinned catalog lacks, are priced with their tiers', async (t) => {
  const provider = (catalog: string) => ({ group: 'paid', format: 'anthropic', catalog, models: {} }) as unknown as ProviderConfig;
  const anthropic = provider('anthropic');
  for (const id of ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-opus-4-5-20251101', 'claude-haiku-4-5']) {
    t.notOk(Object.hasOwn(CATALOG_INDEX.anthropic!, id), `${id} is not in the first catalog`);
    t.equal(resolvePrice(anthropic, id).source, RULES_SOURCE, `${id} priced by the second source`);
  }
  const sonnet = resolvePrice(anthropic, 'claude-sonnet-4-5-20250929').price as Price;
  t.match(sonnet, { input: 3, output: 15, cached: 0.3, cache_write: 3.75, tiers: [{ above_input_tokens: 200000, input: 6, output: 22.5 }] });
  t.equal(resolvePrice(anthropic, 'claude-sonnet-4-20250514').source, 'catalog@1.3.0', 'the first catalog still comes first');
  t.equal(resolvePrice(provider(''), 'claude-sonnet-4-5').source, 'none', 'catalog: "" turns both off');
  t.equal(resolvePrice(provider('openai'), 'gpt-5.1-codex').source, RULES_SOURCE);
});

t.test("a field the YAML sets holds at every prompt length, over the second source's tiers", async (t) => {
  const withYaml = (price: Record<string, unknown>) =>
    ({ group: 'paid', format: 'anthropic', catalog: 'anthropic', models: { 'claude-sonnet-4-5': { kind: 'llm', price } } }) as unknown as ProviderConfig;
  const long = { input: 250_000, cached: 10_000, cacheWrite: 0, output: 1_000, reasoning: 0 } as Usage;
  const cached = resolvePrice(withYaml({ cached: 0.25 }), 'claude-sonnet-4-5');
  t.equal(cached.source, RULES_SOURCE);
  t.same((cached.price as Price).tiers, [{ above_input_tokens: 200000, input: 6, cache_write: 7.5, output: 22.5, cache_write_1h: 12 }], "the tier keeps the fields the YAML leaves");
  t.equal(listCostPico(long, cached.price as Price) / 1e12, (250_000 * 6 + 10_000 * 0.25 + 1_000 * 22.5) / 1e6, 'a long prompt: cache reads at the YAML price, the rest at the tier');
  const input = resolvePrice(withYaml({ input: 2.4 }), 'claude-sonnet-4-5').price as Price;
  t.equal(listCostPico(long, input) / 1e12, (250_000 * 2.4 + 10_000 * 0.6 + 1_000 * 22.5) / 1e6, 'input at the YAML price past the tier too');
  const own = resolvePrice(withYaml({ tiers: [{ above_input_tokens: 100_000, output: 30 }] }), 'claude-sonnet-4-5').price as Price;
  t.same(own.tiers, [{ above_input_tokens: 100_000, output: 30 }], "the YAML's tiers replace the source's");
  const all = resolvePrice(withYaml({ input: 1, output: 2 }), 'claude-sonnet-4-5');
  t.same([all.source, (all.price as Price).tiers], ['config', undefined], 'a model price with input and output is the YAML\'s own, no tiers');
});

t.test('a dated price change applies from its date, as the package chooses', async (t) => {
  // Find a model whose prices change on a date, and check both sides of it against the package.
  let checked = 0;
  for (const catalogId of Object.keys(CATALOG_INDEX)) {
    const p = genai.findProvider({ providerId: catalogId });
    if (p === undefined || LEFT_OUT_PROVIDERS.has(catalogId)) continue;
    for (const m of p.models) {
      if (!Array.isArray(m.prices)) continue;
      const dates = (m.prices as { constraint?: { type: string; start_date?: string } }[]).flatMap((v) => (v.constraint?.type === 'start_date' ? [Date.parse(v.constraint.start_date!)] : []));
      for (const at of dates.flatMap((d) => [d - 1, d, d + 86_400_000])) {
        const ours = rulesPrice(catalogId, m.id, at);
        if (ours?.price == null) continue;
        const want = genai.calcPrice(USAGES[2]!.pkg, m.id, { providerId: catalogId, timestamp: new Date(at) })!.total_price;
        const got = listCostPico(USAGES[2]!.u, ours.price) / 1e12;
        t.ok(Math.abs(got - want) <= 1e-9 * Math.max(1, want), `${catalogId} ${m.id} at ${new Date(at).toISOString()}: ${got} for ${want}`);
        if (at < Math.max(...dates)) t.ok(ours.changesAt > at && ours.changesAt <= Math.max(...dates), 'and says when it changes');
        checked++;
      }
    }
  }
  t.ok(checked > 0, `${checked} dated prices checked`);
});
