// A regression test from a review of OAuth connections (2026-11-30); the defect it guards, as the review found it:
// /v1/messages/count_tokens on an OAuth Anthropic-format provider: an upstream 401 does not mark the token stale
// (pipeline/count-tokens.ts never reports to the router), so the refused token keeps going upstream.
import t from 'tap';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';

t.test('count_tokens 401', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  const gw = await gateway(t, { acme: { ...provider(up.url.replace(/\/v1$/, ''), tok.url), format: 'anthropic', models: { 'claude-x': { kind: 'llm' } } } });
  await seed(gw.store, 'acme');
  const count = () => fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'acme/claude-x', messages: [{ role: 'user', content: 'hi' }] }) }).then(async (r) => ({ status: r.status, body: await r.text() }));
  up.st.validTokens = new Set(['AT-SECRET-0']);
  const r1 = await count();
  t.comment('1', r1.status, r1.body.slice(0, 120));
  up.st.validTokens = new Set(['AT-SECRET-1']); // AT-0 revoked upstream; a refresh would give AT-1
  const r2 = await count(); const r3 = await count(); const r4 = await count();
  t.comment('2..4', r2.status, r3.status, r4.status, 'tokens sent:', up.st.auth, 'refresh grants:', tok.st.grants.length);
  t.equal(r3.status, 200, 'after a 401 the next request refreshes first');
});
