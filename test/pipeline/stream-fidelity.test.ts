// What a client of a same-format stream can observe is the upstream's (src/pipeline/chat.ts, passthrough.ts,
// docs/translation.md "Same-format passthrough"): the upstream's 2xx status, its `retry:` and `id:` fields, comments
// where they came and CRLF line ends, the bytes unchanged but where the gateway must change them (the usage chunk it
// asked for and the client did not); an upstream 204 or 205 is answered as such, with no body, and recorded with its
// status. The fake upstream writes a scripted answer in pieces cut inside a CRLF; the client reads the raw bytes.

import t from 'tap';
import { request } from 'undici';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { fakeProvider, formatOf } from '../helpers/fake-any-format.js';
import { listenLoopback } from '../helpers/loopback.js';

const chunk = (delta: object, finish: string | null) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
const USAGE_BLOCK = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } })}\r\n\r\n`;
const CHAT = [
  ': keep-alive\r\nretry: 3000\r\n\r\n',
  `id: 1\r\ndata: ${chunk({ role: 'assistant', content: 'hi' }, null)}\r\n\r\n`,
  ': still thinking\r\n\r\n',
  `data: ${chunk({}, 'stop')}\r\nid: 2\r\n\r\n`,
  USAGE_BLOCK,
  'data: [DONE]\r\n\r\n',
];
const ANTHROPIC = [
  'retry: 5000\r\n: hello\r\n\r\n',
  `event: message_start\r\nid: a1\r\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 11, output_tokens: 1 } } })}\r\n\r\n`,
  `event: content_block_start\r\ndata: ${JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })}\r\n\r\n`,
  `event: content_block_delta\r\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } })}\r\n\r\n`,
  `event: content_block_stop\r\ndata: ${JSON.stringify({ type: 'content_block_stop', index: 0 })}\r\n\r\n`,
  `event: message_delta\r\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } })}\r\n\r\n`,
  `event: message_stop\r\ndata: ${JSON.stringify({ type: 'message_stop' })}\r\n\r\n`,
];
const STREAMS: Readonly<Record<string, string>> = { chat: CHAT.join(''), messages: ANTHROPIC.join('') };
// Cut after the finish chunk, whose blank line is missing too: the [DONE] the gateway appends is a frame of its own.
const CUT = CHAT.slice(0, 4).join('').replace(/\r\n\r\n$/, '');

// The first path segment is the status the fake answers with; a stream in pieces, each cut inside a CRLF.
const up = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  for await (const _ of req);
  const status = Number(req.url!.split('/')[1]);
  if (status === 204 || status === 205) {
    res.writeHead(status);
    res.end();
    return;
  }
  const text = req.url!.includes('/cut/') ? CUT : STREAMS[formatOf(req.url!)]!;
  res.writeHead(status, { 'content-type': 'text/event-stream' });
  for (const piece of text.split(/(?<=\r)(?=\n)/)) await new Promise<void>((r) => res.write(piece, () => r()));
  res.end();
}, (_err, res) => res.destroy());

const gw = await startApp(t, {
  providers: {
    chat201: fakeProvider(up.port, '201', 'openai'), chat204: fakeProvider(up.port, '204', 'openai'), chat205: fakeProvider(up.port, '205', 'openai'),
    cut: fakeProvider(up.port, '200/cut', 'openai'),
    anth201: fakeProvider(up.port, '201', 'anthropic'), anth204: fakeProvider(up.port, '204', 'anthropic'),
  },
});

async function post(path: string, body: Record<string, unknown>) {
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, text: await res.body.text(), id: String(res.headers['x-request-id']) };
}
const chatBody = (provider: string, extra: Record<string, unknown> = {}) => ({ model: `${provider}/m`, messages: [{ role: 'user', content: 'hi' }], ...extra });

t.test('OpenAI chat fast path: the upstream status and bytes, retry, ids, comments and CRLF as sent', async (t) => {
  const res = await post('/v1/chat/completions', chatBody('chat201', { stream: true, stream_options: { include_usage: true } }));
  t.equal(res.status, 201, "the upstream's 201, not 200");
  t.equal(res.text, STREAMS.chat, 'byte for byte: retry:, id: after data:, comments in place, CRLF');
  t.match((await gw.rows(`request_id = '${res.id}'`))[0], { status: 'success', http_status: 201, input_tokens: '11', output_tokens: '3' });
});

t.test('OpenAI chat fast path: only the usage chunk the gateway asked for is taken out', async (t) => {
  const res = await post('/v1/chat/completions', chatBody('chat201', { stream: true }));
  t.equal(res.text, STREAMS.chat!.replace(USAGE_BLOCK, ''), 'every other byte as sent');
  t.match((await gw.rows(`request_id = '${res.id}'`))[0], { input_tokens: '11', output_tokens: '3' }, 'its usage recorded');
});

t.test('a stream that ends without [DONE] and without its last blank line gets a [DONE] frame of its own', async (t) => {
  const res = await post('/v1/chat/completions', chatBody('cut', { stream: true, stream_options: { include_usage: true } }));
  t.equal(res.text, `${CUT}\n\ndata: [DONE]\n\n`, 'the upstream text, then a blank line and the [DONE]');
});

t.test('an upstream 204 or 205 is answered as such, with no body, streamed or not', async (t) => {
  for (const [provider, stream] of [['chat204', true], ['chat204', false], ['chat205', true]] as const) {
    const res = await post('/v1/chat/completions', chatBody(provider, { stream }));
    t.equal(res.status, Number(provider.slice(-3)), `${provider}, stream ${stream}: the upstream's status (was a 200 stream or a 502)`);
    t.equal(res.text, '', 'no body');
    t.match((await gw.rows(`request_id = '${res.id}'`))[0], { status: 'success', http_status: Number(provider.slice(-3)), usage_source: 'none' });
  }
  const anth = await post('/v1/messages', { model: 'anth204/m', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(anth.status, 204, 'Anthropic passthrough: 204');
  t.equal(anth.text, '');
});

t.test('Anthropic passthrough: the upstream status and bytes as sent', async (t) => {
  const res = await post('/v1/messages', { model: 'anth201/m', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 201, "the upstream's 201");
  t.equal(res.text, STREAMS.messages, 'byte for byte');
  t.match((await gw.rows(`request_id = '${res.id}'`))[0], { status: 'success', http_status: 201 });
});
