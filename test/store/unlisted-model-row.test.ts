// The `model` column of a usage row is the routed `<prefix>/<id>`, which a provider with allow_unlisted_models takes
// from the client as it came: it is kept as requested_model is (src/store/rows.ts), at most MAX_REQUESTED_MODEL
// characters and without lone surrogates. Before, ClickHouse refused a row whose model held a lone surrogate (an
// answered request with no row, counted as rejected) and a 5,000-character id was stored in full. Real gateway,
// real embedded store.

import t from 'tap';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { MAX_REQUESTED_MODEL } from '../../src/ledger/record.js';

const gw = await startApp(t, { providers: { open: { ...DEMO_PROVIDER, allow_unlisted_models: true } } });

/** A Chat request for `model`, written by hand so a lone surrogate goes as its JSON escape. */
async function ask(model: string): Promise<Response> {
  const json = JSON.stringify(model).replace(/[\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"model":${json},"messages":[{"role":"user","content":"hi"}]}`,
  });
}

const long = `open/${'y'.repeat(5000)}`;
// The bound cuts the pair of U+1F642 in two: the half left is replaced too.
const cutPair = `open/${'x'.repeat(MAX_REQUESTED_MODEL - 6)}🙂tail`;
const cases: [string, string, string][] = [
  ['a lone surrogate', 'open/a\ud800b', 'open/a\ufffdb'],
  ['an id over the bound', long, long.slice(0, MAX_REQUESTED_MODEL)],
  ['a bound through a surrogate pair', cutPair, `open/${'x'.repeat(MAX_REQUESTED_MODEL - 6)}\ufffd`],
];

for (const [name, model, stored] of cases) {
  t.test(`${name}: answered, one row, the model column cleaned and bounded`, async (t) => {
    const res = await ask(model);
    t.equal(res.status, 200);
    await res.text();
    const id = res.headers.get('x-request-id')!;
    let rows: Record<string, unknown>[] = [];
    await waitFor(async () => (rows = await gw.rows(`toString(request_id) = '${id}'`)).length > 0);
    t.equal(rows.length, 1, 'one row');
    t.match(rows[0], { status: 'success', http_status: 200, provider: 'open' });
    t.equal(rows[0]!.model, stored, 'model as stored');
    t.equal(rows[0]!.requested_model, stored, 'the same as requested_model');
    // The span names the model bounded as the row does (a span attribute takes a lone surrogate as it is).
    const span = gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === id)!;
    const bounded = model.slice(0, MAX_REQUESTED_MODEL);
    t.equal(span.name, `chat ${bounded}`, 'the span named after the bounded model');
    t.equal(span.attributes['gen_ai.request.model'], model.slice('open/'.length).slice(0, MAX_REQUESTED_MODEL), 'its request model (the id) bounded too');
  });
}

t.test('no row was dropped', async (t) => {
  await gw.flush();
  const m = await gw.metrics();
  t.match(m, /tollgate_usage_rows_dropped_total\{reason="rejected"\} 0\n/);
  t.equal((await gw.rows()).length, cases.length, 'every answered request has its row');
});
