// Prices from the catalog, unknown costs and price edits, end to end: a fake OpenAI upstream on a real socket, the
// gateway on the embedded ClickHouse. A model the catalog prices is billed at its prices in the row and in
// /api/usage; a model the catalog lacks, at the second price source's; a paid model with no price anywhere has an unknown cost (price_source 'none', flagged in /api/usage and
// /api/quota), not a silent 0; the catalog's max_output_tokens clamps; a live price edit changes only new rows.

import t from 'tap';
import { request } from 'undici';
import { startApp, testConfig } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { CATALOG_SOURCE } from '../../src/config/catalog-prices.js';
import { RULES_SOURCE } from '../../src/config/price-rules.js';
import { pricingWarnings } from '../../src/config/pricing.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const up = await startFakeOpenAI(t);
// `openai` names a catalog provider; no price in the YAML. `acme` is paid and priced nowhere.
const providers = (openaiExtra: Record<string, unknown> = {}) => ({
  openai: fakeProvider(up.baseUrl, { price: undefined, models: { 'gpt-4o': { kind: 'llm' }, 'gpt-5.1': { kind: 'llm' }, 'gpt-5.1-codex': { kind: 'llm' } }, ...openaiExtra }),
  acme: fakeProvider(up.baseUrl, { price: undefined, models: { mystery: { kind: 'llm' } } }),
});
const strip = (p: Record<string, Record<string, unknown>>) =>
  Object.fromEntries(Object.entries(p).map(([k, v]) => [k, Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined))]));
const gw = await startApp(t, { providers: strip(providers()) });

// DEFAULT_USAGE of the fake: prompt 11 (3 cached), completion 7 (2 reasoning). The catalog's gpt-4o: 2.5 / 10 / 1.25.
const CATALOG_COST = (8 * 2.5 + 3 * 1.25 + 5 * 10 + 2 * 10) / 1e6;

async function chat(model: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
  await res.body.text();
  return res.statusCode;
}

async function getJson(path: string): Promise<Record<string, unknown>> {
  const res = await request(`${gw.url}${path}`);
  return (await res.body.json()) as Record<string, unknown>;
}

t.test('a catalog model with no YAML price is billed at the catalog price, in the row and in /api/usage', async (t) => {
  t.equal(await chat('openai/gpt-4o'), 200);
  const [row] = await gw.rows(`model = 'openai/gpt-4o'`);
  t.equal(row!.price_source, CATALOG_SOURCE);
  t.equal(Number(row!.cost), CATALOG_COST);
  t.equal(Number(row!.list_cost), CATALOG_COST);
  const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === row!.request_id);
  t.equal(span?.attributes['tollgate.price_source'], CATALOG_SOURCE, 'the span says the same as the row');
  const usage = (await getJson('/api/usage?period=today')) as { byModel: { model: string; cost: number; cost_known?: boolean }[] };
  const m = usage.byModel.find((b) => b.model === 'openai/gpt-4o');
  t.equal(m?.cost, CATALOG_COST);
  t.equal(m?.cost_known, undefined, 'a known cost keeps the spec shape');
});

t.test('a model the catalog lacks is billed at the second source\'s price', async (t) => {
  // @pydantic/genai-prices 0.1.8: gpt-5.1 (and gpt-5.1-codex, by its rule) 1.25 / 10 / 0.125 cached.
  const cost = (8 * 1.25 + 3 * 0.125 + 5 * 10 + 2 * 10) / 1e6;
  for (const model of ['openai/gpt-5.1', 'openai/gpt-5.1-codex']) {
    t.equal(await chat(model), 200);
    const [row] = await gw.rows(`model = '${model}'`);
    t.equal(row!.price_source, RULES_SOURCE, `${model}: the row says which source priced it`);
    t.equal(Number(row!.cost), cost, `${model}: billed at its price`);
    const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === row!.request_id);
    t.equal(span?.attributes['tollgate.price_source'], RULES_SOURCE, 'the span says the same as the row');
  }
  const providers = (await getJson('/api/providers')) as { providers: { id: string; models: { id: string; price_source: string; unpriced: boolean }[] }[] };
  t.match(providers.providers.find((p) => p.id === 'openai')?.models.find((m) => m.id === 'gpt-5.1'), { price_source: RULES_SOURCE, unpriced: false });
});

t.test('a paid model with no price anywhere: warned at load, cost unknown (not 0) in the row, /api/usage and /api/quota', async (t) => {
  t.same(pricingWarnings(gw.holder.current).map((w) => w.path), ['providers.acme.models.mystery']);
  t.equal(await chat('acme/mystery'), 200);
  const [row] = await gw.rows(`model = 'acme/mystery'`);
  t.equal(row!.price_source, 'none', 'the row says nobody priced it');
  t.equal(gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === row!.request_id)?.attributes['tollgate.price_source'], 'none');
  t.ok(Number(row!.total_tokens) > 0);
  const usage = (await getJson('/api/usage?period=today')) as {
    summary: { unpriced_requests?: number; cost_known?: boolean };
    byModel: { model: string; cost_known?: boolean; unpriced_requests?: number }[];
  };
  t.match(usage.byModel.find((b) => b.model === 'acme/mystery'), { cost_known: false, unpriced_requests: 1 });
  t.match(usage.summary, { cost_known: false, unpriced_requests: 1 }, 'the total is a lower bound and says so');
  const quota = (await getJson('/api/quota')) as { providers: { id: string; pricing: { unpriced_models: string[] } }[] };
  t.same(quota.providers.find((p) => p.id === 'acme')?.pricing, { unpriced_models: ['acme/mystery'] });
  t.same(quota.providers.find((p) => p.id === 'openai')?.pricing, { unpriced_models: [] });
});

t.test("the catalog's max_output_tokens clamps a request when the YAML sets none", async (t) => {
  t.equal(await chat('openai/gpt-4o', { max_tokens: 100000 }), 200);
  t.equal(up.received.at(-1)!.body.max_tokens, 16384);
});

t.test('a live price edit applies to new requests only; past rows keep their recorded cost', async (t) => {
  const before = await gw.rows(`model = 'openai/gpt-4o'`);
  gw.holder.replace(testConfig({ providers: strip(providers({ price: { input: 5, output: 20 } })) }, gw.holder.current.storage.data_dir));
  t.equal(await chat('openai/gpt-4o'), 200);
  const after = await gw.rows(`model = 'openai/gpt-4o'`);
  t.equal(after.length, before.length + 1);
  for (const [i, row] of before.entries()) {
    t.equal(Number(after[i]!.cost), Number(row.cost), 'an old row keeps its cost');
    t.equal(after[i]!.price_source, CATALOG_SOURCE);
  }
  const last = after.at(-1)!;
  t.equal(last.price_source, 'config');
  t.equal(Number(last.cost), (8 * 5 + 3 * 5 + 5 * 20 + 2 * 20) / 1e6, 'the new price (cached falls back to the new input price)');
});

t.test('check-config warns about an unpriced paid model on stderr and still accepts the file', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `providers:\n  acme:\n    group: paid\n    format: openai\n    base_url: http://127.0.0.1:9/v1\n    models:\n      mystery: {}\n`);
  const r = await runCli(t, ['check-config', file], { cwd: dir });
  t.equal(r.code, 0);
  t.match(r.stderr, /warning: providers\.acme\.models\.mystery: paid model acme\/mystery has no price in the YAML or the catalog/);
});
