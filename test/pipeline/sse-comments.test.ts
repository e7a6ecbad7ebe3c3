// An upstream's SSE comments (OpenRouter's `: OPENROUTER PROCESSING`, keep-alives while a model thinks) reach the
// client on the OpenAI chat fast path and on the translated path, and the fast path keeps the upstream's `id:`
// fields: a client behind a proxy with an idle timeout sees the upstream's keep-alives, and a client that reads event
// ids gets them. The fake OpenAI upstream writes the comments before its first chunk and after its first delta; the
// client reads the raw bytes (an SDK would hide comments). The rows are recorded as usual.

import t, { type Test } from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const up = await startFakeOpenAI(t);
const gw = await startApp(t, { providers: { open: fakeProvider(up.baseUrl) } });
const COMMENTS = ['OPENROUTER PROCESSING', 'keep-alive'];

async function streamed(t: Test, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  t.equal(res.statusCode, 200, `${path}: 200`);
  return res.body.text();
}

t.test('OpenAI chat, same format: the comments and the event ids reach the client', async (t) => {
  up.next({ kind: 'ok', words: ['Hel', 'lo'], comments: COMMENTS, ids: true });
  const text = await streamed(t, '/v1/chat/completions', {
    model: 'open/gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }],
  });
  for (const c of COMMENTS) t.equal(text.split(`: ${c}\n`).length - 1, 2, `": ${c}" twice, as the upstream sent it`);
  t.ok(text.indexOf(': OPENROUTER PROCESSING') < text.indexOf('data: '), 'the first comment before the first event');
  const ids = [...text.matchAll(/^id: (\d+)\ndata: /gm)].map((m) => Number(m[1]));
  t.same(ids, [1, 2, 3, 4, 5], 'each data frame with its upstream id: role, two deltas, finish, usage');
  t.match(text, /data: \[DONE\]\n\n$/, 'ends with [DONE]');
  const [row] = await gw.rows(`model = 'open/gpt-4o' AND stream`);
  t.match(row, { status: 'success', usage_source: 'reported' }, 'recorded, usage as reported');
});

t.test('OpenAI chat, same format: no comments from the upstream, none added', async (t) => {
  up.next({ kind: 'ok', words: ['a'] });
  const text = await streamed(t, '/v1/chat/completions', { model: 'open/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.notMatch(text, /^:/m, 'no comment lines');
  t.notMatch(text, /^id:/m, 'no id lines');
});

t.test('translated (an Anthropic client, an OpenAI upstream): the comments reach the client', async (t) => {
  up.next({ kind: 'ok', words: ['Hel', 'lo'], comments: COMMENTS, ids: true });
  const text = await streamed(t, '/v1/messages', {
    model: 'open/gpt-4o', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }],
  });
  for (const c of COMMENTS) t.ok(text.includes(`: ${c}\n`), `": ${c}" forwarded`);
  t.match(text, /event: message_start/, 'an Anthropic stream');
  t.match(text, /event: message_stop/, 'to its end');
  t.notMatch(text, /^id:/m, 'the OpenAI ids are not Anthropic events\' ids: not forwarded');
});
