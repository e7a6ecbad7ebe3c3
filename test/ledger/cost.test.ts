// The cost engine (DESIGN.md decisions 4 and 5): each bucket at its own price, fallbacks for unpriced buckets,
// per-model overrides, billed cost only for paid providers, and integer pico-dollar arithmetic.

import t from 'tap';
import { parseConfig } from '../../src/config/load.js';
import type { ProviderConfig } from '../../src/config/types.js';
import { ZERO_COST, computeCost, effectivePrice, listCostPico } from '../../src/ledger/cost.js';
import { NO_USAGE, type Usage } from '../../src/ledger/types.js';

/** Provider configs exactly as the YAML loader yields them (validated, defaults applied, frozen). */
function provider(p: Record<string, unknown>): ProviderConfig {
  const cfg = parseConfig({ providers: { p: { format: 'mock', ...p } } }, {});
  return cfg.providers.p!;
}

const usage = (u: Partial<Usage>): Usage => ({ ...NO_USAGE, ...u });

// The integration test's numbers: prompt 11 (3 cached), completion 7 (2 reasoning), at OpenAI gpt-4o prices.
const U = usage({ input: 8, cached: 3, output: 5, reasoning: 2 });
const GPT4O = { input: 2.5, output: 10, cached: 1.25 };
const EXPECT = 0.00009375; // (8 x 2.5 + 3 x 1.25 + 5 x 10 + 2 x 10) / 1e6

t.test('paid: billed cost equals list cost, each bucket at its own price', async (t) => {
  const p = provider({ group: 'paid', price: GPT4O, models: { 'gpt-4o': {} } });
  t.same(computeCost(p, 'gpt-4o', U), { cost: EXPECT, listCost: EXPECT, priceSource: 'config' });
  t.same(computeCost(p, 'gpt-4o', usage({ input: 1_000_000 })), { cost: 2.5, listCost: 2.5, priceSource: 'config' }, 'one million input tokens cost the input price');
  t.same(computeCost(p, 'gpt-4o', usage({ cached: 1_000_000 })), { cost: 1.25, listCost: 1.25, priceSource: 'config' }, 'cached reads at the cached price');
  t.same(computeCost(p, 'gpt-4o', usage({ output: 1_000_000 })), { cost: 10, listCost: 10, priceSource: 'config' });
});

t.test('subscription and free bill nothing but keep the list cost', async (t) => {
  for (const group of ['subscription', 'free'] as const) {
    const p = provider({ group, price: GPT4O });
    t.same(computeCost(p, 'gpt-4o', U), { cost: 0, listCost: EXPECT, priceSource: 'config' }, group);
  }
});

t.test('no price: zero cost and zero list cost', async (t) => {
  const p = provider({ group: 'paid', models: { m: {} } });
  t.equal(effectivePrice(p, 'm'), null);
  t.same(computeCost(p, 'm', U), { cost: 0, listCost: 0, priceSource: 'none' });
  t.same(computeCost(p, 'unlisted', U), ZERO_COST);
  t.ok(Object.isFrozen(ZERO_COST));
  const partial = provider({ group: 'paid', models: { m: { price: { input: 3 } } } });
  t.equal(effectivePrice(partial, 'm'), null, 'a model override without both input and output is not a price on its own');
  t.same(computeCost(partial, 'm', U), { cost: 0, listCost: 0, priceSource: 'none' });
});

t.test('per-model price overrides the provider price, bucket by bucket', async (t) => {
  const p = provider({
    group: 'paid',
    price: { input: 1, output: 2 },
    models: {
      small: {},
      big: { price: { input: 5, output: 20 } },
      cachey: { price: { cached: 0.1 } },
      thinker: { price: { reasoning: 50 } },
    },
  });
  t.same(effectivePrice(p, 'small'), { input: 1, output: 2 });
  t.same(effectivePrice(p, 'big'), { input: 5, output: 20 });
  t.same(effectivePrice(p, 'cachey'), { input: 1, output: 2, cached: 0.1 }, 'a partial override keeps the provider price for the rest');
  t.same(effectivePrice(p, 'unlisted'), { input: 1, output: 2 }, 'an unlisted model uses the provider price');

  const u = usage({ input: 100, cached: 1000, output: 10, reasoning: 10 });
  t.equal(computeCost(p, 'small', u).cost, (100 * 1 + 1000 * 1 + 10 * 2 + 10 * 2) / 1e6);
  t.equal(computeCost(p, 'big', u).cost, (100 * 5 + 1000 * 5 + 10 * 20 + 10 * 20) / 1e6);
  t.equal(computeCost(p, 'cachey', u).cost, (100 * 1 + 1000 * 0.1 + 10 * 2 + 10 * 2) / 1e6);
  t.equal(computeCost(p, 'thinker', u).cost, (100 * 1 + 1000 * 1 + 10 * 2 + 10 * 50) / 1e6);

  const onlyModel = provider({ group: 'paid', models: { m: { price: { input: 3, output: 15 } } } });
  t.same(computeCost(onlyModel, 'm', usage({ input: 1000, output: 100 })), { cost: 0.0045, listCost: 0.0045, priceSource: 'config' }, 'a full model price with no provider price');
  t.same(computeCost(onlyModel, 'other', usage({ input: 1000 })), ZERO_COST, 'and other models of that provider are unpriced');
});

t.test('fallbacks: cached and cache write at the input price, reasoning at the output price', async (t) => {
  const p = provider({ group: 'paid', price: { input: 3, output: 15 } });
  t.equal(computeCost(p, 'm', usage({ cached: 1_000_000 })).cost, 3, 'cached falls back to input');
  t.equal(computeCost(p, 'm', usage({ cacheWrite: 1_000_000 })).cost, 3, 'cache write falls back to input');
  t.equal(computeCost(p, 'm', usage({ reasoning: 1_000_000 })).cost, 15, 'reasoning falls back to output');

  const priced = provider({ group: 'paid', price: { input: 3, output: 15, cached: 0.3, cache_write: 3.75, reasoning: 60 } });
  const u = usage({ input: 1000, cached: 2000, cacheWrite: 3000, output: 400, reasoning: 500 });
  t.equal(listCostPico(u, priced.price!), 1000 * 3e6 + 2000 * 0.3e6 + 3000 * 3.75e6 + 400 * 15e6 + 500 * 60e6);
  t.equal(computeCost(priced, 'm', u).cost, 0.05085, 'each bucket at its own price: 0.003 + 0.0006 + 0.01125 + 0.006 + 0.03');

  const freeCache = provider({ group: 'paid', price: { input: 3, output: 15, cached: 0 } });
  t.equal(computeCost(freeCache, 'm', usage({ cached: 1_000_000 })).cost, 0, 'an explicit cached price of 0 is a price, not a fallback');
});

t.test('null buckets cost nothing', async (t) => {
  const p = provider({ group: 'paid', price: GPT4O });
  t.same(computeCost(p, 'gpt-4o', NO_USAGE), { cost: 0, listCost: 0, priceSource: 'config' });
  t.same(computeCost(p, 'gpt-4o', usage({ output: 3 })), { cost: 0.00003, listCost: 0.00003, priceSource: 'config' });
});

t.test('pico-dollar arithmetic is exact', async (t) => {
  const p = provider({ group: 'paid', price: { input: 0.1, output: 0.2 } });
  t.not(0.1 / 1e6 + 0.2 / 1e6, 3e-7, 'floating point would give 3.0000000000000004e-7');
  t.equal(computeCost(p, 'm', usage({ input: 1, output: 1 })).cost, 3e-7, '0.1 + 0.2 micro-dollars is exactly 0.3');
  t.equal(listCostPico(usage({ input: 3 }), { input: 0.1, output: 0 }), 300_000, '3 x 0.1 is 300000 pico, not 300000.00000000006');
  t.equal(listCostPico(usage({ input: 123_456_789 }), { input: 0.000001, output: 0 }), 123_456_789, 'the smallest six-decimal price is one pico per token');
  t.equal(listCostPico(usage({ output: 1000 }), { input: 0, output: 1.234567 }), 1_234_567_000);
  t.equal(computeCost(provider({ group: 'paid', price: { input: 2.5, output: 10 } }), 'm', usage({ input: 1_000_000_000 })).cost, 2500, 'a billion tokens');
  const picoParts = [usage({ input: 7 }), usage({ cached: 13 }), usage({ output: 17 }), usage({ reasoning: 19 })].map((u) => listCostPico(u, { input: 0.15, output: 0.6, cached: 0.075 }));
  t.ok(picoParts.every(Number.isInteger), `integers: ${picoParts.join(', ')}`);
  t.equal(
    listCostPico(usage({ input: 7, cached: 13, output: 17, reasoning: 19 }), { input: 0.15, output: 0.6, cached: 0.075 }),
    picoParts.reduce((a, b) => a + b, 0),
    'the whole is the sum of its buckets',
  );
  const c = computeCost(provider({ group: 'paid', price: { input: 0.15, output: 0.6, cached: 0.075 } }), 'm', usage({ input: 7, cached: 13, output: 17, reasoning: 19 }));
  t.equal(c.cost, (7 * 150_000 + 13 * 75_000 + 17 * 600_000 + 19 * 600_000) / 1e12);
  t.equal(c.cost.toFixed(12), '0.000023625000');
});

t.test('price tiers: a prompt above a tier is priced at the highest tier it passes, the rest of the base kept', async (t) => {
  // Gemini 2.5 Pro's shape: 1.25 / 10 up to 200k prompt tokens, 2.5 / 15 above; cache reads 0.31 then 0.625.
  const tiered = { input: 1.25, output: 10, cached: 0.31, tiers: [{ above_input_tokens: 200_000, input: 2.5, output: 15, cached: 0.625 }] };
  const p = provider({ group: 'paid', price: tiered, models: { pro: {} } });
  const at = (input: number, cached = 0) => computeCost(p, 'pro', usage({ input, cached, output: 1_000 })).cost;
  t.equal(at(200_000), (200_000 * 1.25 + 1_000 * 10) / 1e6, 'exactly at the threshold: the base price');
  t.equal(at(200_001), (200_001 * 2.5 + 1_000 * 15) / 1e6, 'one token above: the whole request at the tier');
  t.equal(at(150_000, 60_000), (150_000 * 2.5 + 60_000 * 0.625 + 1_000 * 15) / 1e6, 'cache reads count towards the prompt');
  const two = provider({
    group: 'paid', price: { input: 1, output: 2, tiers: [{ above_input_tokens: 1000, input: 3 }, { above_input_tokens: 100, input: 2 }] }, models: { m: {} },
  });
  t.equal(computeCost(two, 'm', usage({ input: 500, output: 10 })).cost, (500 * 2 + 10 * 2) / 1e6, 'the highest tier passed, whatever the order; output keeps the base');
  t.equal(computeCost(two, 'm', usage({ input: 5000 })).cost, (5000 * 3) / 1e6);
  const modelTiers = provider({ group: 'paid', price: { input: 1, output: 2, tiers: [{ above_input_tokens: 10, input: 9 }] }, models: { m: { price: { tiers: [] } } } });
  t.equal(computeCost(modelTiers, 'm', usage({ input: 100 })).cost, 100 / 1e6, "a model's own (empty) tier list replaces the provider's");
  t.throws(() => provider({ price: { input: 1, output: 2, tiers: [{ input: 3 }] } }), /above_input_tokens/, 'a tier without its threshold is refused, naming the field');
});
