// The request log says when a request's cost is unknown (docs/catalog.md): a paid provider priced by the catalog with
// allow_unlisted_models, asked for an id the catalog does not know, records price_source 'none' and a placeholder 0.
// /api/usage/request-logs and /api/usage/logs give that request `cost: null` and `cost_known: false` (as /api/usage
// marks a model), its list cost null and its price source, and never the placeholder as a price; a priced request, a
// failure that spent nothing and a subscription model priced nowhere keep a known cost of their own.

import t from 'tap';
import { join } from 'node:path';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/tmp.js';
import { CATALOG_SOURCE } from '../../src/config/catalog-prices.js';

const dir = tempDir(t);
const fake = await startFakeOpenAI(t);
const paid = fakeProvider(fake.baseUrl, { catalog: 'openai', allow_unlisted_models: true, models: { 'gpt-4o': { kind: 'llm' } } });
delete paid.price;
const sub = fakeProvider(fake.baseUrl, { name: 'Sub', group: 'subscription', models: { 'own-model': { kind: 'llm' } } });
delete sub.price;
const gw = await startApp(t, { server: { host: '127.0.0.1' }, storage: { batch: { flush_ms: 50 } }, providers: { fake: paid, sub } }, { dataDir: join(dir, 'data') });

async function chat(model: string): Promise<number> {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await r.text();
  return r.status;
}

const USAGE = { prompt_tokens: 2_000_000, completion_tokens: 1_000_000 };
t.before(async () => {
  const statuses: number[] = [];
  fake.next({ kind: 'ok', usage: USAGE });
  statuses.push(await chat('fake/gpt-4o')); // a model the catalog prices
  fake.next({ kind: 'ok', usage: USAGE });
  statuses.push(await chat('fake/gpt-4o-unlisted-alias')); // an id the catalog does not know
  fake.next({ kind: 'error', status: 500, body: { error: { message: 'down', type: 'server_error' } } });
  statuses.push(await chat('fake/another-unlisted')); // an unlisted id that failed before any usage
  fake.next({ kind: 'ok', usage: USAGE });
  statuses.push(await chat('sub/own-model')); // a subscription model priced nowhere
  if (statuses.join() !== '200,200,500,200') throw new Error(`unexpected statuses ${statuses.join()}`);
  await gw.flush();
});

interface Entry { model: string; cost: number | null; cost_known?: boolean; list_cost?: number | null; price_source?: string | null; total_tokens: number }
const byModel = (data: Entry[], model: string): Entry => data.find((e) => e.model === model)!;

t.test('the rows behind it: price_source none and a placeholder 0', async (t) => {
  const [row] = await gw.rows(`model = 'fake/gpt-4o-unlisted-alias'`);
  t.equal(row!.price_source, 'none');
  t.equal(Number(row!.cost), 0);
  const usage = (await (await fetch(`${gw.url}/api/usage`)).json()) as { summary: Record<string, unknown> };
  t.match(usage.summary, { cost_known: false, unpriced_requests: 1 }, '/api/usage says the total is a lower bound');
});

t.test('request-logs: an unknown cost is null with cost_known false, never $0', async (t) => {
  const r = await fetch(`${gw.url}/api/usage/request-logs`);
  t.equal(r.status, 200);
  const { data } = (await r.json()) as { data: Entry[] };
  t.equal(data.length, 4);
  t.match(byModel(data, 'fake/gpt-4o-unlisted-alias'), { cost: null, cost_known: false, list_cost: null, price_source: 'none', total_tokens: 3_000_000 });

  const priced = byModel(data, 'fake/gpt-4o');
  t.equal(priced.cost, 15, 'catalog price: 2M input at 2.5 + 1M output at 10');
  t.equal(priced.list_cost, 15);
  t.equal(priced.price_source, CATALOG_SOURCE);
  t.notOk('cost_known' in priced, 'a known cost keeps the record\'s shape');

  const failed = byModel(data, 'fake/another-unlisted');
  t.match(failed, { cost: 0, list_cost: 0, price_source: 'none', total_tokens: 0 }, 'no tokens spent: the cost is known to be 0');
  t.notOk('cost_known' in failed);

  const own = byModel(data, 'sub/own-model');
  t.match(own, { cost: 0, list_cost: null, price_source: 'none' }, 'a subscription bills 0 whatever the price; its list cost is unknown');
  t.notOk('cost_known' in own);
});

t.test('logs (the compact record) and format=text say it too', async (t) => {
  const { data } = (await (await fetch(`${gw.url}/api/usage/logs`)).json()) as { data: Entry[] };
  const unknown = byModel(data, 'fake/gpt-4o-unlisted-alias');
  t.equal(unknown.cost, null);
  t.equal(unknown.cost_known, false);
  t.equal(byModel(data, 'fake/gpt-4o').cost, 15);
  t.notOk('cost_known' in byModel(data, 'fake/gpt-4o'));

  for (const path of ['/api/usage/logs', '/api/usage/request-logs']) {
    const text = await (await fetch(`${gw.url}${path}?format=text`)).text();
    const line = text.split('\n').find((l) => l.includes(' fake/gpt-4o-unlisted-alias '));
    t.match(line, / cost=- /, `${path}: '-' for the unknown cost`);
    t.match(text.split('\n').find((l) => l.includes(' fake/gpt-4o ')), / cost=15 /, `${path}: a known cost as a number`);
  }
});
