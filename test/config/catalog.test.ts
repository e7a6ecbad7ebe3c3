// The catalog (config/catalog.ts) and price resolution (config/pricing.ts): the pinned package, what it knows, YAML
// over catalog, the price source of each case, max_output_tokens filled at load, and the unpriced-model warnings.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../../src/config/load.js';
import { catalogModel, catalogModels, catalogProvider, catalogProviders } from '../../src/config/catalog.js';
import { CATALOG_PACKAGE, CATALOG_SOURCE, CATALOG_VERSION, catalogIdOf, catalogOutputLimit, catalogPrice } from '../../src/config/catalog-prices.js';
import { pricingWarnings, resolvePrice, unpricedModels } from '../../src/config/pricing.js';
import { resolveModel } from '../../src/routing/resolve.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
const installed = JSON.parse(readFileSync(new URL(`../../node_modules/${CATALOG_PACKAGE}/package.json`, import.meta.url), 'utf8')) as { version: string };

t.test('the catalog version is the exact pin in package.json and the installed one', async (t) => {
  t.equal(pkg.dependencies[CATALOG_PACKAGE], CATALOG_VERSION, 'pinned exactly (no range)');
  t.equal(installed.version, CATALOG_VERSION);
  t.equal(CATALOG_SOURCE, `catalog@${CATALOG_VERSION}`);
});

t.test('what the catalog knows about a model and a provider', async (t) => {
  const m = catalogModel('openai', 'gpt-4o');
  t.same(m?.price, { input: 2.5, output: 10, cached: 1.25 });
  t.equal(m?.maxOutputTokens, 16384);
  t.equal(m?.contextTokens, 128000);
  t.same(m?.capabilities, ['vision', 'tools']);
  const sonnet = catalogModel('anthropic', 'claude-3-7-sonnet-20250219');
  t.same(sonnet?.price, { input: 3, output: 15, cached: 0.3, cache_write: 3.75 }, 'cache read and cache write prices');
  t.equal(catalogModel('openai', 'no-such-model'), null);
  t.same(catalogProvider('anthropic'), { id: 'anthropic', name: 'Anthropic', format: 'anthropic', baseUrl: 'https://api.anthropic.com', env: ['ANTHROPIC_API_KEY'], doc: 'https://docs.anthropic.com/en/docs/about-claude/models' });
  t.equal(catalogProvider('deepseek')?.format, 'openai', 'an OpenAI-compatible provider speaks the openai format');
  t.equal(catalogProvider('amazon-bedrock')?.format, null, 'a provider Tollgate has no format for');
});

t.test('pricing reads the catalog through the build-time index, which agrees with the package on every model', async (t) => {
  let models = 0;
  const differ: string[] = [];
  for (const p of catalogProviders()) {
    if (catalogIdOf(p.id, {}) !== p.id) differ.push(`provider ${p.id}`);
    for (const m of catalogModels(p.id)) {
      models++;
      if (JSON.stringify(catalogPrice(p.id, m.id)) !== JSON.stringify(m.price) || catalogOutputLimit(p.id, m.id) !== m.maxOutputTokens) differ.push(`${p.id}/${m.id}`);
    }
  }
  t.ok(models > 500, `${models} models compared`);
  t.same(differ, []);
  t.equal(catalogIdOf('my-gateway', {}), null, 'a prefix the catalog does not know');
  t.equal(catalogIdOf('mine', { catalog: 'openai' }), 'openai', 'the catalog key names one');
  t.equal(catalogIdOf('openai', { catalog: '' }), null, "catalog: '' turns it off");
  t.equal(catalogPrice('openai', 'toString'), null, 'an inherited property is no model');
  t.equal(catalogIdOf('constructor', {}), null, 'nor a provider');
});

const load = (providers: Record<string, unknown>) => parseConfig({ providers }, {});
const base = { group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:9/v1', auth: { type: 'none' } };

t.test('price sources: YAML wins, the catalog fills the rest, none when nobody prices it', async (t) => {
  const cfg = load({
    openai: { ...base, models: { 'gpt-4o': {}, 'gpt-4o-mini': { price: { cached: 0.01 } }, 'in-house': {} } },
    priced: { ...base, price: { input: 1, output: 2 }, catalog: 'openai', models: { 'gpt-4o': {} } },
    mine: { ...base, catalog: 'openai', models: { 'gpt-4o': { price: { input: 9, output: 9 } } } },
    off: { ...base, catalog: '', models: { 'gpt-4o': {} } },
  });
  const openai = cfg.providers.openai!;
  t.equal(openai.catalog, 'openai', 'the prefix names a catalog provider');
  t.same(resolvePrice(openai, 'gpt-4o'), { price: { input: 2.5, output: 10, cached: 1.25 }, source: CATALOG_SOURCE });
  t.same(resolvePrice(openai, 'gpt-4o-mini'), { price: { ...catalogModel('openai', 'gpt-4o-mini')!.price, cached: 0.01 }, source: CATALOG_SOURCE }, 'a YAML field on top of the catalog');
  t.same(resolvePrice(openai, 'in-house'), { price: null, source: 'none' });
  t.same(resolvePrice(cfg.providers.priced!, 'gpt-4o'), { price: { input: 1, output: 2 }, source: 'config' }, 'a provider price wins over the catalog');
  t.same(resolvePrice(cfg.providers.mine!, 'gpt-4o'), { price: { input: 9, output: 9 }, source: 'config' }, 'a full model price wins');
  t.equal(cfg.providers.off!.catalog, '', "catalog: '' turns it off");
  t.same(resolvePrice(cfg.providers.off!, 'gpt-4o'), { price: null, source: 'none' });
});

t.test('max_output_tokens: the catalog fills it at load when the YAML does not set it; the route carries it', async (t) => {
  const cfg = load({ openai: { ...base, models: { 'gpt-4o': {}, 'gpt-4.1': { max_output_tokens: 1000 }, 'in-house': {} } } });
  t.equal(cfg.providers.openai!.models['gpt-4o']!.max_output_tokens, 16384);
  t.equal(cfg.providers.openai!.models['gpt-4.1']!.max_output_tokens, 1000, 'the YAML value wins');
  t.equal(cfg.providers.openai!.models['in-house']!.max_output_tokens, undefined);
  t.same(cfg.providers.openai!.models['gpt-4o']!.capabilities, [], 'capabilities are not applied from the catalog');
  t.equal(resolveModel(cfg, 'openai/gpt-4o').modelConfig?.max_output_tokens, 16384, 'what the clamp reads');
});

t.test('a paid model with no price anywhere is warned about; subscription and free ones are not', async (t) => {
  const cfg = load({
    acme: { ...base, models: { mystery: {}, known: { price: { input: 1, output: 1 } } } },
    sub: { ...base, group: 'subscription', models: { mystery: {} } },
  });
  t.same(unpricedModels(cfg), [{ provider: 'acme', model: 'mystery' }]);
  const warnings = pricingWarnings(cfg);
  t.equal(warnings.length, 1);
  t.equal(warnings[0]!.path, 'providers.acme.models.mystery');
  t.match(warnings[0]!.message, /no price in the YAML or the catalog .*recorded as unknown/);
});
