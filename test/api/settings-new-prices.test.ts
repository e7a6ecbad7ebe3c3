// The settings API takes every price the config does (docs/config.md): the cache writes that last an hour, the web
// searches' price and the service tiers' prices. It refused them as "unknown key" (the console's price editor could
// not set prices the docs describe); a tier's bad name or too many tiers are the config's 400s.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { configFileText, demoProvidersYaml, startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir(t);
const file = join(dir, 'config.yaml');
const TEXT = configFileText(join(dir, 'data'), demoProvidersYaml());
writeFileSync(file, TEXT);
const gw = await startApp(t, parse(TEXT) as Record<string, unknown>, { dataDir: join(dir, 'data'), configFile: file });

const put = async (body: unknown) => {
  const res = await fetch(`${gw.url}/api/settings/prices/demo`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: JSON.parse(await res.text()) as { error?: { code: string; message: string } } };
};

t.test('cache_write_1h, web_search_per_1k and service_tiers are written and in force', async (t) => {
  const r = await put({ price: { cache_write_1h: 7, web_search_per_1k: 25, service_tiers: { flex: { input: 0.5, output: 1 } } } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  const price = (parse(readFileSync(file, 'utf8')) as { providers: { demo: { price: Record<string, unknown> } } }).providers.demo.price;
  t.match(price, { cache_write_1h: 7, web_search_per_1k: 25, service_tiers: { flex: { input: 0.5, output: 1 } } }, 'in the file');
  t.match(gw.holder.current.providers.demo!.price, { cache_write_1h: 7, web_search_per_1k: 25, service_tiers: { flex: { input: 0.5, output: 1 } } }, 'in force');
  t.equal((await put({ price: { service_tiers: { flex: null } } })).status, 200, 'a tier removed by null');
  t.notOk(gw.holder.current.providers.demo!.price?.service_tiers?.flex);
});

t.test('input_audio and output_audio, on the provider, a model and a service tier', async (t) => {
  const r = await put({ price: { input_audio: 40, output_audio: 80, service_tiers: { priority: { input_audio: 70 } } }, models: { 'echo-1': { input_audio: 10 } } });
  t.equal(r.status, 200, JSON.stringify(r.body));
  const demo = gw.holder.current.providers.demo!;
  t.match(demo.price, { input_audio: 40, output_audio: 80, service_tiers: { priority: { input_audio: 70 } } }, 'in force');
  t.match(demo.models['echo-1']!.price, { input_audio: 10 }, "the model's");
  t.equal((await put({ price: { input_audio: 10_000 } })).status, 400, 'at most 9,999, as input');
  t.equal((await put({ price: { input_audio: null, output_audio: null, service_tiers: { priority: null } }, models: { 'echo-1': { input_audio: null } } })).status, 200, 'removed by null');
  t.equal(gw.holder.current.providers.demo!.price?.input_audio, undefined);
});

t.test("the config's bounds hold", async (t) => {
  t.equal((await put({ price: { web_search_per_1k: 1000 } })).status, 400, 'web_search_per_1k at most 999');
  t.equal((await put({ price: { service_tiers: { 'Bad Name': { input: 1 } } } })).status, 400, 'a tier name the config refuses');
  t.equal((await put({ price: { service_tiers: { flex: { nope: 1 } } } })).status, 400, 'an unknown price in a tier');
});
