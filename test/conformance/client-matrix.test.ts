// Conformance, every client format x every provider: a streamed text answer (the text, the client format's own end
// and finish, the row with the provider's five buckets under the client's endpoint) and a whole tool answer (the
// call with its arguments, the tool finish in the client's vocabulary).

import t from 'tap';
import { CLIENTS, send } from './clients.js';
import { FIRST_ARGS, TOOL_NAME } from './providers.js';
import { answered, bucketsOf, eachProvider, rowOf, startSuite } from './suite.js';

const suite = await startSuite(t);
const { gw } = suite;

eachProvider(t, suite, 'client-text', async (t, p, up) => {
  for (const c of CLIENTS) {
    up.script({ kind: 'text' });
    const r = await send(gw.url, c, { model: `${p.id}/${p.models.main}`, stream: true });
    answered(t, r);
    const a = c.parse(r.text, true);
    t.equal(a.text, p.text, `${c.name}: the text`);
    t.equal(a.end, 'done', `${c.name}: the format's own end`);
    t.equal(a.finish, c.finishes.text, `${c.name}: finish ${c.finishes.text}`);
    const row = await rowOf(gw, r.requestId);
    t.match(row, { endpoint: c.endpoint, provider: p.id, status: 'success', stream: true, usage_source: 'reported' }, `${c.name}: the row`);
    t.same(bucketsOf(row), p.usage, `${c.name}: the provider's buckets`);
  }
});

eachProvider(t, suite, 'client-tool', async (t, p, up) => {
  for (const c of CLIENTS) {
    up.script({ kind: 'tools', args: [FIRST_ARGS] });
    const r = await send(gw.url, c, { model: `${p.id}/${p.models.main}`, stream: false, tools: true });
    answered(t, r);
    const a = c.parse(r.text, false);
    t.same(a.calls, [{ name: TOOL_NAME, args: FIRST_ARGS }], `${c.name}: the call and its arguments`);
    t.equal(a.finish, c.finishes.tool, `${c.name}: finish ${c.finishes.tool}`);
    t.match(await rowOf(gw, r.requestId), { endpoint: c.endpoint, status: 'success', stream: false }, `${c.name}: the row`);
  }
});
