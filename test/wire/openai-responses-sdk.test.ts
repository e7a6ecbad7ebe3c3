// The `openai-responses` codec against the real `openai` SDK v6: what `client.responses.create` sends parses into
// the expected canonical request, and what the codec renders (whole answers and streams, including the failure
// path) is read by `responses.create` / `responses.stream` without error. The SDK talks to a fake `fetch`.

import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import t from 'tap';
import { responsesCodec } from '../../src/wire/openai-responses/index.js';
import { SseParser } from '../../src/wire/sse.js';
import type { CanonicalEvent } from '../../src/wire/canonical.js';

const fixture = (name: string) => new URL(`../fixtures/openai-responses/${name}`, import.meta.url);
const WHOLE = JSON.parse(readFileSync(fixture('response-reasoning-tool-call.json'), 'utf8')) as Record<string, unknown>;
const STREAM = readFileSync(fixture('stream-reasoning-tool-call.sse'));
const TEXT = 'Let me check the current weather in Paris for you.';
const CALL = 'call_Qm3vT8pL2xR7kN4wY9sB1dFh';

/** A client whose every request is answered by `answer`; the request bodies it sent are kept. */
function client(answer: () => Response) {
  const sent: Record<string, unknown>[] = [];
  const c = new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://gateway.test/v1',
    maxRetries: 0,
    fetch: async (_url: string | URL | Request, init?: RequestInit) => {
      sent.push(JSON.parse(String(init?.body)) as Record<string, unknown>);
      return answer();
    },
  });
  return { c, sent };
}
const jsonAnswer = (body: unknown) => () => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
const sseAnswer = (text: string) => () => new Response(text, { headers: { 'content-type': 'text/event-stream' } });

/** The canonical events of the upstream fixture stream. */
function upstreamEvents(): CanonicalEvent[] {
  const p = new SseParser();
  const parser = responsesCodec.createStreamParser();
  return [...p.push(STREAM), ...p.end()].flatMap((f) => parser.frame(f));
}

t.test('what responses.create sends parses into the canonical request', async (t) => {
  const { c, sent } = client(jsonAnswer(WHOLE));
  await c.responses.create({
    model: 'openai/o4-mini',
    instructions: 'Be brief.',
    input: [
      { role: 'user', content: [{ type: 'input_text', text: 'Weather?' }, { type: 'input_image', image_url: 'https://example.com/sky.jpg', detail: 'low' }] },
      { type: 'function_call', call_id: CALL, name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: CALL, output: '18C' },
    ],
    tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }],
    tool_choice: 'required',
    reasoning: { effort: 'low', summary: 'auto' },
    max_output_tokens: 500,
  });
  t.equal(sent.length, 1);
  const req = responsesCodec.parseRequest(sent[0]);
  t.strictSame(req, {
    model: 'openai/o4-mini',
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image', source: { kind: 'url', url: 'https://example.com/sky.jpg' }, detail: 'low' }] },
      { role: 'assistant', content: [{ type: 'tool_call', id: CALL, name: 'get_weather', arguments: '{"city":"Paris"}' }] },
      { role: 'user', content: [{ type: 'tool_result', callId: CALL, name: 'get_weather', content: [{ type: 'text', text: '18C' }] }] },
    ],
    stream: false,
    tools: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }],
    toolChoice: { type: 'required' },
    maxTokens: 500,
    thinking: { kind: 'level', level: 'low' },
    includeReasoning: true,
  });
});

t.test('responses.create reads renderResponse: output_text, items, usage', async (t) => {
  const body = responsesCodec.renderResponse(responsesCodec.parseResponse(WHOLE), 'o4-mini');
  const { c } = client(jsonAnswer(body));
  const res = await c.responses.create({ model: 'o4-mini', input: 'Weather in Paris?' });
  t.equal(res.output_text, TEXT, 'the SDK computes output_text from the rendered output');
  t.strictSame(res.output.map((o) => o.type), ['reasoning', 'message', 'function_call']);
  const call = res.output[2];
  t.equal(call?.type === 'function_call' ? call.call_id : null, CALL);
  t.equal(res.usage?.input_tokens, 2143);
  t.equal(res.usage?.input_tokens_details.cached_tokens, 1920);
  t.equal(res.usage?.output_tokens, 310);
  t.equal(res.usage?.output_tokens_details.reasoning_tokens, 256);
  t.equal(res.usage?.total_tokens, 2453);
});

t.test('responses.stream reads the rendered stream: deltas, snapshots, final response', async (t) => {
  const r = responsesCodec.createStreamRenderer('o4-mini');
  const sse = upstreamEvents().map((e) => r.event(e)).join('') + r.end();
  const { c, sent } = client(sseAnswer(sse));
  const stream = c.responses.stream({ model: 'o4-mini', input: 'Weather in Paris?' });
  let textSnapshot = '';
  let argsSnapshot = '';
  const types: string[] = [];
  stream.on('response.output_text.delta', (e) => (textSnapshot = e.snapshot));
  stream.on('response.function_call_arguments.delta', (e) => (argsSnapshot = e.snapshot));
  for await (const e of stream) types.push(e.type);
  const final = await stream.finalResponse();
  t.equal(sent[0]!.stream, true, 'the SDK asked for a stream');
  t.equal(types[0], 'response.created');
  t.equal(types.at(-1), 'response.completed');
  t.equal(textSnapshot, TEXT, 'the SDK accumulated the text deltas');
  t.equal(argsSnapshot, '{"city":"Paris","unit":"celsius"}');
  t.equal(final.status, 'completed');
  t.equal(final.output_text, TEXT);
  t.strictSame(final.output.map((o) => o.type), ['reasoning', 'message', 'function_call']);
  const reasoning = final.output[0];
  t.match(reasoning?.type === 'reasoning' ? reasoning.summary[0]?.text : '', /^\*\*Deciding on a tool call\*\*/);
  t.equal(final.usage?.total_tokens, 2453);
  t.equal(final.usage?.output_tokens_details.reasoning_tokens, 256);
});

t.test('responses.stream reads the failure path: response.failed then [DONE]', async (t) => {
  const r = responsesCodec.createStreamRenderer('o4-mini');
  const events = upstreamEvents();
  const cutAt = events.findIndex((e) => e.type === 'text_delta');
  const sse = events.slice(0, cutAt + 3).map((e) => r.event(e)).join('') + r.error('TOLLGATE_ERR_UPSTREAM_STALL', 'the upstream sent nothing for 30 s');
  const { c } = client(sseAnswer(sse));
  const stream = c.responses.stream({ model: 'o4-mini', input: 'Weather in Paris?' });
  const types: string[] = [];
  for await (const e of stream) types.push(e.type);
  const final = await stream.finalResponse();
  t.equal(types.at(-1), 'response.failed', '[DONE] ends the stream quietly after response.failed');
  t.equal(final.status, 'failed');
  t.equal(final.error?.message, 'the upstream sent nothing for 30 s');
  t.equal(final.error?.code as string, 'TOLLGATE_ERR_UPSTREAM_STALL');
  t.equal(final.output_text, 'Let me check', 'the partial text so far');
});
