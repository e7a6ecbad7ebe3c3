// The Chat fast path forwards the upstream's blocks as they came; when the last one (an error chunk, a [DONE]) came
// without its blank line before the upstream closed, the gateway counted it as an event (its parser takes a final
// block at the close) but the client's did not (an SSE parser drops an event the close cut short): the OpenAI SDK
// ended the stream as a success while the row said failure (review s12c). The last block is now ended for the client.

import t from 'tap';
import OpenAI from 'openai';
import { request } from 'undici';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { fakeProvider } from '../helpers/fake-any-format.js';
import { listenLoopback } from '../helpers/loopback.js';
import { waitFor } from '../helpers/wait.js';

const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const ERR = 'data: {"error":{"message":"overloaded mid-stream","type":"server_error","code":"overloaded"}}';
const SCRIPTS: Record<string, string> = {
  errtail: chunk({ role: 'assistant', content: 'partial ans' }, null) + ERR, // the error block, no blank line, then the close
  donetail: chunk({ role: 'assistant', content: 'hi' }, null) + chunk({}, 'stop') + 'data: [DONE]',
  // CRLF line ends, the last block ended by one CRLF (one line end, not a blank line: review s12g)
  crlferr: chunk({ role: 'assistant', content: 'partial ans' }, null).replace(/\n/g, '\r\n') + `${ERR}\r\n`,
  crlffin: (chunk({ role: 'assistant', content: 'hi' }, null) + chunk({}, 'stop')).replace(/\n/g, '\r\n').replace(/\r\n$/, ''),
};
const up = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  for await (const _ of req);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(SCRIPTS[req.url!.split('/')[1]!]);
}, (_err, res) => res.destroy());

const gw = await startApp(t, { providers: Object.fromEntries(Object.keys(SCRIPTS).map((k) => [k, fakeProvider(up.port, k, 'openai')])) });
const body = (p: string) => ({ model: `${p}/m`, messages: [{ role: 'user', content: 'hi' }], stream: true });

t.test('an upstream error chunk that ends the stream without its blank line reaches the client as an event', async (t) => {
  const raw = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body('errtail')) });
  const text = await raw.body.text();
  // The record is published as the relay ends, which may be just after the client read the last byte.
  let row: Record<string, unknown> | undefined;
  await waitFor(async () => (row = (await gw.rows(`request_id = '${String(raw.headers['x-request-id'])}'`))[0]) !== undefined);
  t.match(row, { status: 'failure', error_type: 'upstream_stream_error' }, 'the gateway recorded the upstream error');
  t.match(text, /"code":"overloaded"}}\n\n$/, 'the error event is ended, so an SSE client dispatches it');

  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  let got = '';
  let threw: unknown = null;
  try {
    for await (const c of await client.chat.completions.create(body('errtail') as OpenAI.ChatCompletionCreateParamsStreaming)) got += c.choices[0]?.delta?.content ?? '';
  } catch (e) {
    threw = e;
  }
  t.equal(got, 'partial ans');
  t.match(String(threw), /overloaded mid-stream/, 'the OpenAI SDK sees the upstream error, as the record does');
});

t.test('an upstream [DONE] without its blank line is a complete event', async (t) => {
  const raw = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body('donetail')) });
  const text = await raw.body.text();
  t.match(text, /data: \[DONE\]\n\n$/);
  t.equal(text.match(/\[DONE\]/g)?.length, 1, 'one [DONE]');
});

t.test('CRLF line ends: a last block ended by one CRLF is still open, and is ended for the client', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const read = async (p: string): Promise<{ got: string; threw: unknown }> => {
    let got = '';
    try {
      for await (const c of await client.chat.completions.create(body(p) as OpenAI.ChatCompletionCreateParamsStreaming)) got += c.choices[0]?.delta?.content ?? '';
    } catch (e) {
      return { got, threw: e };
    }
    return { got, threw: null };
  };
  const err = await read('crlferr');
  t.equal(err.got, 'partial ans');
  t.match(String(err.threw), /overloaded mid-stream/, 'the error the upstream sent, as an event');
  const raw = await request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body('crlffin')) });
  const text = await raw.body.text();
  t.match(text, /"finish_reason":"stop"}]}\r\n\n\ndata: \[DONE\]\n\n$/, "the upstream's last block ended before the gateway's [DONE]: two events, not one");
  const fin = await read('crlffin');
  t.same(fin, { got: 'hi', threw: null }, 'the SDK reads the answer whole, no parse error');
});

