// A same-format stream the upstream breaks off mid-frame (a stall, here `stall_s` 1, or the connection cut) reaches
// the client up to its last whole frame, then the format's terminal error on a frame of its own
// (src/pipeline/passthrough.ts with WholeFrames, src/wire/sse.ts). Before (a review of streaming under pressure), the
// bytes went as they came, so the error was glued to the cut frame: the Anthropic SDK threw a SyntaxError or, cut
// right after `event: content_block_delta`, raised nothing and ended as if the answer were whole; the OpenAI SDK threw
// a SyntaxError. Official SDKs, and a raw read of every frame, against a fake upstream on a real socket.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { createServer } from 'node:http';
import { startApp } from '../helpers/app.js';

t.setTimeout(60_000);

const ANTHROPIC = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}\n\n',
];
const RESPONSES = [
  'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"m","output":[]}}\n\n',
  'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hello"}\n\n',
];
const GEMINI = ['data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hello"}]},"index":0}],"modelVersion":"m"}\n\n'];

/** What the upstream sends after its whole frames: `cut` characters of the next one, then silence. */
let cut = 0;
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const frames = req.url!.includes('/messages') ? ANTHROPIC : req.url!.includes('/responses') ? RESPONSES : GEMINI;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // the whole frames in one write, the cut one in another: as a network delivers them
    res.write(frames.join(''));
    setTimeout(() => res.write(frames.at(-1)!.slice(0, cut)), 50);
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
t.teardown(() => new Promise<void>((r) => { upstream.closeAllConnections(); upstream.close(() => r()); }));
const origin = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;

const common = { group: 'paid', auth: { type: 'api_key', key: 'sk-test-0123456789abcdef' }, price: { input: 1, output: 1 }, timeouts: { stall_s: 1 }, models: { m: { kind: 'llm' } } };
const gw = await startApp(t, {
  providers: {
    anth: { ...common, format: 'anthropic', base_url: origin },
    resp: { ...common, format: 'openai-responses', base_url: `${origin}/v1` },
    gem: { ...common, format: 'gemini', base_url: `${origin}/v1beta` },
  },
});

/** Every frame the client received, parsed: each must be whole (its data JSON, or [DONE]). */
async function rawFrames(path: string, body: unknown): Promise<{ event: string | null; data: unknown }[]> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return text.split('\n\n').filter((f) => f.trim() !== '').map((f) => {
    const event = /^event: (.*)$/m.exec(f)?.[1] ?? null;
    const lines = f.split('\n').filter((l) => l.startsWith('data: '));
    // Gemini's terminal error is its error body on a line of its own, as Google's streams end (wire/gemini/same-format.ts)
    const data = lines.length === 0 ? f.trim() : lines.map((l) => l.slice(6)).join('\n');
    return { event, data: data === '[DONE]' ? data : JSON.parse(data) as unknown };
  });
}

for (const at of [20, 60]) {
  t.test(`cut ${at} characters into a frame: whole frames, then the terminal error`, async (t) => {
    cut = at;
    const a = await rawFrames('/v1/messages', { model: 'anth/m', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    t.same(a.map((f) => f.event), ['message_start', 'content_block_start', 'content_block_delta', 'error'], 'Anthropic: the whole frames, then an error event');
    t.match(a.at(-1)!.data, { type: 'error', error: { type: String, message: /stall/ } });
    const r = await rawFrames('/v1/responses', { model: 'resp/m', input: 'hi', stream: true });
    t.same(r.map((f) => f.event), ['response.created', 'response.output_text.delta', 'response.failed', null], 'Responses: the whole frames, response.failed, [DONE]');
    const g = await rawFrames('/v1beta/models/gem/m:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    t.equal(g.length, 2, 'Gemini: the whole frame, then the error');
    t.match(g[1]!.data, { error: { code: 504 } });
  });
}

t.test('the SDKs raise the error, and none takes the cut answer as whole', async (t) => {
  cut = 30; // right after `event: content_block_delta`, where the Anthropic SDK used to end quietly
  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 });
  let text = '';
  const thrown = await (async () => {
    const s = await anthropic.messages.create({ model: 'anth/m', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    for await (const e of s) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
  })().then(() => null, (e: unknown) => e);
  t.ok(thrown instanceof Anthropic.APIError, `Anthropic: an APIError (${String(thrown)})`);
  t.equal(text, 'hello', 'after the text of the whole frames');
  cut = 60;
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const events: string[] = [];
  const oaiThrown = await (async () => {
    const s = await openai.responses.create({ model: 'resp/m', input: 'hi', stream: true });
    for await (const e of s) events.push(e.type);
  })().then(() => null, (e: unknown) => e);
  t.notOk(oaiThrown instanceof SyntaxError, `OpenAI: no SyntaxError (${String(oaiThrown)})`);
  t.equal(events.at(-1), 'response.failed', 'the stream ends on response.failed');
  const genai = new GoogleGenAI({ apiKey: 'x', httpOptions: { baseUrl: gw.url } });
  const gThrown = await (async () => {
    for await (const c of await genai.models.generateContentStream({ model: 'gem/m', contents: 'hi' })) void c;
  })().then(() => null, (e: unknown) => e);
  t.match(String(gThrown), /504/, 'Gemini: an ApiError 504');
});

t.test('rows: each cut stream a failure with the stall', async (t) => {
  const rows = await gw.rows();
  t.ok(rows.length >= 9);
  t.ok(rows.every((r) => r.status === 'failure' && r.error_type === 'TOLLGATE_ERR_UPSTREAM_STALL'), JSON.stringify(rows.map((r) => [r.provider, r.status, r.error_type])));
});
