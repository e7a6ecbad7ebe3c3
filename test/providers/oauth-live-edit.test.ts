// A regression test from a review of OAuth connections (2026-11-30); the defect it guards, as the review found it:
// A live config edit (any edit: here an unrelated provider is added) gives the OAuth provider a new OAuthSession
// (routing/router.ts #tokenSource compares the settings object), so what the old one knew is lost:
//  A: the 401 "stale" mark: the refused token goes upstream again, a second client gets a 401;
//  B: tokens refreshed but not saved (docs: "later ones use the new tokens from memory"): the new session reads the
//     file's old tokens, whose refresh token the server rotated away: the provider ends up "not connected".
import t from 'tap';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';
import { testConfig } from '../helpers/app.js';

const other = { name: 'Other', group: 'paid', format: 'openai', base_url: 'http://127.0.0.1:9/v1', auth: { type: 'none' }, models: { m: { kind: 'llm' } } };

t.test('A: 401, live edit, next request', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  const providers = { acme: provider(up.url, tok.url) };
  const gw = await gateway(t, providers);
  await seed(gw.store, 'acme');
  up.st.validTokens = new Set(['AT-SECRET-0']);
  t.comment('1', (await gw.ask()).status);
  up.st.validTokens = new Set(); // the provider revoked AT-0
  t.comment('2 upstream refuses the token:', (await gw.ask()).status);
  gw.holder.replace(testConfig({ providers: { ...providers, other } }, gw.dataDir));
  up.st.validTokens = null;
  up.st.validTokens = new Set(['AT-SECRET-1']);
  const r3 = await gw.ask();
  t.comment('3 after an unrelated live edit:', r3.status, 'token sent:', up.st.auth.at(-1), 'refresh grants:', tok.st.grants.length);
  t.equal(tok.st.grants.length, 1, 'the 401 leads to a refresh before the next request (docs/connections.md "Refresh")');
});

t.test('B: refreshed tokens not saved, then a live edit', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  tok.st.rotate = new Set(['RT-SECRET-0']);
  const providers = { acme: provider(up.url, tok.url) };
  const gw = await gateway(t, providers);
  await seed(gw.store, 'acme');
  const file = gw.store.pathFor('acme');
  const saved = readFileSync(file);
  up.st.validTokens = new Set(['AT-SECRET-0']);
  t.comment('1', (await gw.ask()).status);
  // the file cannot be replaced for a while (a directory in its place stands for a full or read-only disk)
  rmSync(file); mkdirSync(file); writeFileSync(`${file}/x`, '');
  up.st.validTokens = new Set();
  t.comment('2 upstream 401:', (await gw.ask()).status);
  up.st.validTokens = new Set(['AT-SECRET-1']);
  const r3 = await gw.ask();
  t.comment('3 refresh, save fails:', r3.status, r3.body.slice(0, 200));
  t.comment('4 from memory:', (await gw.ask()).status);
  rmSync(file, { recursive: true }); writeFileSync(file, saved, { mode: 0o600 }); // the disk recovers: the file holds what it held
  t.comment('5 still from memory:', (await gw.ask()).status);
  gw.holder.replace(testConfig({ providers: { ...providers, other } }, gw.dataDir));
  const r6 = await gw.ask(); const r7 = await gw.ask();
  t.comment('6 after an unrelated live edit:', r6.status, r6.body.slice(0, 160));
  t.comment('7:', r7.status, r7.body.slice(0, 260));
  t.equal(r7.status, 200, 'the refreshed tokens keep serving');
});
