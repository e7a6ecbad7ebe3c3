// A blank line may end its event with another kind of line end than the line before it (`data: …\n\r\n`, valid
// SSE). The parser ended a frame at `\n\n`, `\r\n\r\n` and `\r\r` only, so two events so ended were one frame whose
// joined data is no JSON: a Chat client got only an error for the whole answer, and every path recorded a billed
// answer as a failure with no usage.

import t from 'tap';
import OpenAI from 'openai';
import { listenLoopback } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';
import { SseParser } from '../../src/wire/sse.js';

t.test('the parser ends a frame at a mixed blank line, whole and in any chunking', async (t) => {
  for (const sep of ['\n\r\n', '\r\n\n', '\n\r', '\r\n\r']) {
    const text = `data: {"a":1}${sep}event: x\ndata: {"b":2}${sep}`;
    const parser = new SseParser();
    const whole = [...parser.push(Buffer.from(text)), ...parser.end()];
    t.same(whole.map((f) => [f.event, f.data]), [[null, '{"a":1}'], ['x', '{"b":2}']], JSON.stringify(sep));
    for (let cut = 1; cut < text.length; cut++) {
      const p = new SseParser();
      const frames = [...p.push(Buffer.from(text.slice(0, cut))), ...p.push(Buffer.from(text.slice(cut))), ...p.end()];
      if (frames.map((f) => f.data).join('|') !== '{"a":1}|{"b":2}') t.fail(`${JSON.stringify(sep)} cut at ${cut}: ${JSON.stringify(frames)}`);
    }
  }
});

t.test('a Chat stream whose events end \\n\\r\\n reaches the client whole, recorded with its usage', async (t) => {
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\r\n`;
  const up = await listenLoopback(t, async (req, res) => {
    for await (const _ of req);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: 'Hel' }, null));
    res.write(chunk({ content: 'lo' }, 'stop'));
    res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } })}\n\r\n`);
    res.end('data: [DONE]\n\r\n');
  }, (err, res) => res.writeHead(500).end(String(err)));
  const gw = await startApp(t, { providers: { o: { group: 'paid', format: 'openai', base_url: `http://127.0.0.1:${up.port}/v1`, auth: { type: 'api_key', key: 'k' }, price: { input: 1, output: 1 }, models: { m: { kind: 'llm' } } } } });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'o/m', stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  let text = '';
  for await (const c of stream.data) text += c.choices[0]?.delta.content ?? '';
  t.equal(text, 'Hello', 'the whole answer');
  await gw.flush();
  const [row] = await gw.rows(`request_id = '${stream.response.headers.get('x-request-id')}'`);
  t.match(row, { status: 'success', input_tokens: 9, output_tokens: 2, usage_source: 'reported' });
});
