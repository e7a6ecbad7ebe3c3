// A regression test from a review of OAuth connections (2026-11-30); the defect it guards, as the review found it:
// A token endpoint whose error_description quotes the refresh token it refused (as OpenAI quotes a wrong API key):
// the gateway copies error_description into the client's error body, the row, the span and the log.
import t from 'tap';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';

t.test('echoed refresh token', async (t) => {
  const tok = await tokenServer(t); const up = await upstream(t);
  const gw = await gateway(t, { acme: provider(up.url, tok.url) });
  await seed(gw.store, 'acme', { expiresInMs: -1000, rt: 'RT-SECRET-0' });
  tok.st.mode = 'echo';
  const r = await gw.ask();
  t.comment('client:', r.status, r.body);
  const rows = JSON.stringify(await gw.rows());
  const spans = JSON.stringify(gw.spans.getFinishedSpans().map((s) => ({ a: s.attributes, e: s.events, st: s.status })));
  t.comment('row has it:', /RT-SECRET-0/.test(rows), (rows.match(/"[a-z_]*":"[^"]*RT-SECRET-0[^"]*"/g) ?? []).join(' '));
  t.comment('span has it:', /RT-SECRET-0/.test(spans), (spans.match(/"[a-z_.]*":"[^"]*RT-SECRET-0[^"]*"/g) ?? []).join(' '));
  t.comment('log lines with it:', gw.logs.filter((l) => /RT-SECRET-0/.test(l)).map((l) => l.slice(0, 300)));
  t.notMatch(r.body, /RT-SECRET-0/);
});
