// Two things a streamed answer's relay does to cost less, and what they must not change (docs/benchmarks.md, "A
// stream's content chunks read without a parse" and "The end of a stream in its last write"):
//  - the stream's last text goes to the client's socket in the same write as the stream's end (the chunked
//    encoding's `0\r\n\r\n`), on the Chat fast path, the same-format passthrough and the translated relay; a last
//    text that would wait for the client to read is written as it comes;
//  - the Chat fast path reads a content chunk of the shape it learnt without parsing it: the client gets the same
//    bytes and the row the same figures as when every chunk is parsed (each chunk another shape).
// A real gateway and fake upstreams on loopback; the gateway's own socket writes are watched.

import t from 'tap';
import type { Socket } from 'node:net';
import { listenLoopback } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';

t.setTimeout(60_000);

const openaiChunk = (delta: object, finish: string | null, extra: object = {}) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra })}\n\n`;

const anthropicEvent = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const ANTHROPIC_STREAM = [
  anthropicEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } }),
  anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hello' } }),
  anthropicEvent('content_block_stop', { index: 0 }),
  anthropicEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }),
  anthropicEvent('message_stop', {}),
].join('');

/** What the next Chat stream's upstream sends, all in one write with its end. */
let chatStream = '';
const up = await listenLoopback(t, async (req, res) => {
  for await (const _ of req);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(req.url === '/v1/messages' ? ANTHROPIC_STREAM : chatStream);
}, (err, res) => res.writeHead(500).end(String(err)));

const common = { group: 'paid', auth: { type: 'api_key', key: 'sk-test-0123456789abcdef' }, price: { input: 1, output: 1 }, models: { m: { kind: 'llm' } } };
const gw = await startApp(t, {
  providers: {
    o: { ...common, format: 'openai', base_url: `http://127.0.0.1:${up.port}/v1` },
    a: { ...common, format: 'anthropic', base_url: `http://127.0.0.1:${up.port}` },
  },
});

/** Every write the gateway's sockets made, as text, in order. */
const writes: string[] = [];
gw.app.server.on('connection', (socket: Socket) => {
  const s = socket as Socket & { _write: (...a: unknown[]) => unknown; _writev: (chunks: { chunk: unknown }[], cb: unknown) => unknown };
  const write = s._write.bind(s);
  const writev = s._writev.bind(s);
  s._write = (chunk: unknown, ...rest: unknown[]) => (writes.push(String(chunk)), write(chunk, ...rest));
  s._writev = (chunks, cb) => (writes.push(chunks.map((c) => String(c.chunk)).join('')), writev(chunks, cb));
});

/** The chunked encoding's end (a write's data ends `\n\n\r\n`: an SSE block, then its chunk's line end). */
/** The request's row, once recorded (a stream with no usage is recorded after its estimate, once the client has it). */
async function rowOf(id: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i++) {
    const [row] = await gw.rows(`request_id = '${id}'`);
    if (row !== undefined) return row;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no row for ${id}`);
}

const END = '0\r\n\r\n';

/** POST `body` to `path`; the answer's text and the gateway's socket write that carried the stream's end. */
async function stream(path: string, body: object): Promise<{ text: string; id: string; endWrite: string }> {
  writes.length = 0;
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  const text = await res.text();
  const ends = writes.filter((w) => w.endsWith(END));
  if (ends.length !== 1) throw new Error(`expected one write with the end, got ${ends.length}`);
  return { text, id: res.headers.get('x-request-id')!, endWrite: ends[0]! };
}

t.test('the stream\'s last text and its end go in one write, on each relay', async (t) => {
  chatStream = openaiChunk({ role: 'assistant', content: '' }, null) + openaiChunk({ content: 'Hel' }, null) + openaiChunk({ content: 'lo' }, 'stop') + 'data: [DONE]\n\n';
  const chat = await stream('/v1/chat/completions', { model: 'o/m', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.text, chatStream, 'the Chat fast path: the client has the upstream\'s bytes');
  t.match(chat.endWrite, /"content":"lo".*data: \[DONE\]\n\n\r\n0\r\n\r\n$/s, 'the Chat fast path: the last read and the end in one write');

  const passed = await stream('/v1/messages', { model: 'a/m', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(passed.text, ANTHROPIC_STREAM, 'the same-format passthrough: the client has the upstream\'s bytes');
  t.match(passed.endWrite, /event: message_stop\ndata: \{"type":"message_stop"\}\n\n\r\n0\r\n\r\n$/, 'the passthrough: the last read and the end in one write');

  const translated = await stream('/v1/chat/completions', { model: 'a/m', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.match(translated.text, /"content":"hello"[\s\S]*data: \[DONE\]\n\n$/, 'the translated relay: the client has the answer in its own format');
  // (Its own closing [DONE] and the end went in one write before: written in the same tick, Node joins them. What the
  // upstream's last read made, the text, was a write of its own.)
  t.match(translated.endWrite, /"content":"hello"[\s\S]*data: \[DONE\]\n\n\r\n0\r\n\r\n$/, 'the translated relay: the last read\'s text, its [DONE] and the end in one write');

  t.match(await rowOf(chat.id), { status: 'success', usage_source: 'estimated' }, 'recorded as served (no usage in that stream)');
  for (const r of [passed, translated]) t.match(await rowOf(r.id), { status: 'success', usage_source: 'reported', output_tokens: '2' }, 'recorded as served');
});

t.test('a last text the client would have to read first is written as it comes, the end after it', async (t) => {
  const big = 'x'.repeat(40_000); // over the socket's high water mark (16 KiB)
  chatStream = openaiChunk({ role: 'assistant', content: '' }, null) + openaiChunk({ content: big }, 'stop') + 'data: [DONE]\n\n';
  const r = await stream('/v1/chat/completions', { model: 'o/m', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(r.text, chatStream, 'the client has every byte');
  t.equal(r.endWrite, END, 'the end on its own: the text went first, as it came');
});

t.test('content chunks read without a parse give the client and the row what a parse of each gives', async (t) => {
  // Contents with escapes, quotes, non-ASCII and control characters among plain ones; OpenAI's random padding beside them.
  const contents = ['Hel', 'lo', ', "wor', 'ld"', '\n', ' — é ✓', 'tab\there', ' plain', ' words', '\\', ' end', '𝄞'];
  const pad = (i: number) => 'abcdefgh'.slice(0, (i % 7) + 1);
  const build = (extra: (i: number) => object) =>
    openaiChunk({ role: 'assistant', content: '' }, null, { obfuscation: 'p' })
    + contents.map((c, i) => openaiChunk({ content: c }, null, { ...extra(i), obfuscation: pad(i) })).join('')
    + openaiChunk({}, 'stop') + 'data: [DONE]\n\n';
  const answers: { text: string; row: Record<string, unknown> }[] = [];
  // One shape for every content chunk (read without a parse but the first), then each chunk another shape (each parsed).
  for (const upstream of [build(() => ({})), build((i) => ({ [`n${i}`]: i }))]) {
    chatStream = upstream;
    const r = await stream('/v1/chat/completions', { model: 'o/m', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    t.equal(r.text, upstream, 'the client has the upstream\'s bytes');
    answers.push({ text: r.text, row: await rowOf(r.id) });
  }
  const [same, each] = answers;
  // No usage reported: the output is estimated from the answer's text, which each way must have read alike.
  for (const key of ['status', 'usage_source', 'output_tokens', 'input_tokens', 'finish_reasons'] as const) t.same(same!.row[key], each!.row[key], `${key} alike`);
  t.equal(same!.row.usage_source, 'estimated', 'estimated from the text');
  t.ok(Number(same!.row.output_tokens) >= 10, `the whole text counted (${String(same!.row.output_tokens)} tokens)`);
  t.ok(Number(same!.row.ttft_ms) > 0 && Number(each!.row.ttft_ms) > 0, 'a time to first token each way');
});
