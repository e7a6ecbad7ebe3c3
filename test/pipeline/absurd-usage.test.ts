// An upstream that reports an absurd token count (a bug, a broken or hostile vendor: 1.2e11, 2^53 + 1, 1e300) is not
// believed: the bucket is taken as not reported and estimated, so the row, the metrics and the span agree and the row
// is stored. Before, the figure went into all three: 8 of 10 such rows were refused by the store (a cost the `cost`
// column cannot hold) while the counters kept 1.2e11 tokens and $2.4M for good; 1e300 blocked the embedded writer for
// every row after it. And a config price is bounded (9,999 USD a 1M tokens), so no call's cost can pass the column.

import t from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_CALL_TOKENS } from '../../src/ledger/types.js';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { startApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/loopback.js';
import { waitFor } from '../helpers/wait.js';

let reported: Record<string, unknown> = {};
const upstream = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  for await (const _ of req);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    id: 'c1', object: 'chat.completion', created: 1, model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'four words of answer' }, finish_reason: 'stop' }], usage: reported,
  }));
}, (err, res) => res.destroy(err as Error));

const gw = await startApp(t, {
  providers: { oa: { group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${upstream.port}/v1`, auth: { type: 'api_key', key: 'sk-x' }, price: { input: 600, output: 600 }, models: { m: {} } } },
});

async function chat(): Promise<string> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'oa/m', messages: [{ role: 'user', content: 'hello there' }] }) });
  await res.arrayBuffer();
  t.equal(res.status, 200);
  return res.headers.get('x-request-id')!;
}
const counter = async (type: string) => Number(/^tollgate_tokens_total\{provider="oa",model="oa\/m",type="(\w+)"\} (\S+)$/m.exec((await gw.metrics()).split('\n').filter((l) => l.includes(`type="${type}"`)).join('\n'))?.[2] ?? 0);

for (const absurd of [1.2e11, 2 ** 53 + 1, 1e300, MAX_CALL_TOKENS + 1]) {
  t.test(`usage of ${absurd} tokens: estimated, stored, and the same in the row and the metrics`, async (t) => {
    const before = { input: await counter('input'), output: await counter('output') };
    reported = { prompt_tokens: absurd, completion_tokens: absurd, total_tokens: absurd * 2 };
    const id = await chat();
    reported = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 };
    const next = await chat();
    // The estimate is settled after the answer (the tokenizer loads on first use): the row follows it.
    await waitFor(async () => (await gw.rows(`request_id = '${id}'`)).length === 1, 10_000);
    const [row] = await gw.rows(`request_id = '${id}'`);
    t.ok(row, "the row is stored");
    t.match(row, { status: 'success', usage_source: 'estimated' });
    const input = Number(row!.input_tokens);
    const output = Number(row!.output_tokens);
    t.ok(input > 0 && input < 100 && output > 0 && output < 100, `estimated from the text (${input} in, ${output} out), not the report`);
    t.equal(await counter('input'), before.input + input + 9, 'the metrics count what the rows say');
    t.equal(await counter('output'), before.output + output + 4);
    t.equal((await gw.rows(`request_id = '${next}'`)).length, 1, 'and the request after it is stored');
  });
}

t.test('a config price over 9,999 USD a 1M tokens is refused', async (t) => {
  const cfg = (input: number) => parseConfig({ providers: { p: { group: 'paid', format: 'mock', price: { input, output: 1 }, models: { m: {} } } } }, {});
  t.doesNotThrow(() => cfg(9999));
  t.throws(() => cfg(10_000), ConfigError);
});
