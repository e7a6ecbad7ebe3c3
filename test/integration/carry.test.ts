// Translation carries what maps (issue 14, item 2), through the gateway to fake upstreams on real sockets: what the
// upstream RECEIVED for each mapping (cache_control and the web search server tool at Anthropic, a response format
// as a forced json_response tool whose call comes back as the answer's text, candidateCount / responseLogprobs at
// Gemini and several choices with logprobs back to a Chat client), the x-tollgate-dropped-params header on whole
// and streamed answers and the tollgate.dropped_params span attribute, the header of the combo attempt that served,
// and the 400 naming `n` for n > 1 to Anthropic (no upstream call; a failure row, as every refused request).

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { DEFAULT_WORDS, geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { waitFor } from '../helpers/wait.js';

const anth = await startFakeAnthropic(t);
const gem = await startFakeGemini(t);
const gw = await startApp(t, {
  providers: {
    anth: fakeAnthropicProvider(anth.url, {
      models: {
        'claude-haiku-4-5': { kind: 'llm', capabilities: ['tools', 'vision'] },
        // Capabilities not described: the request goes as written (a json_schema keeps its schema).
        'claude-open': { kind: 'llm' },
      },
    }),
    gem: geminiProvider(gem, {
      models: { 'gemini-2.0-flash': { kind: 'llm', capabilities: ['tools', 'vision'] }, 'gemini-2.5-pro': { kind: 'llm', capabilities: ['tools', 'structured_output'] } },
    }),
  },
  combos: {
    'claude-only': { strategy: 'fallback', models: ['anth/claude-open'] },
    'claude-then-gemini': { strategy: 'fallback', models: ['anth/claude-haiku-4-5', 'gem/gemini-2.0-flash'] },
  },
});

const HEADER = 'x-tollgate-dropped-params';
const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'gateway-key', maxRetries: 0 });
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer gateway-key', 'x-api-key': 'gateway-key' }, body: JSON.stringify(body) });
}

/** The request span (SERVER) of the request `id`, once it has ended. */
async function requestSpan(id: string) {
  const find = () => gw.spans.getFinishedSpans().find((s) => s.attributes['tollgate.request_id'] === id);
  await waitFor(() => find() !== undefined);
  return find()!;
}

t.test('n > 1 to Anthropic is a 400 naming n: no upstream call, a failure row; n = 1 passes', async (t) => {
  const before = anth.received.length;
  const res = await post('/v1/chat/completions', { model: 'anth/claude-haiku-4-5', n: 2, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(res.status, 400);
  const body = (await res.json()) as { error: Record<string, unknown> };
  t.match(body.error, { code: 'TOLLGATE_ERR_NOT_SUPPORTED', type: 'invalid_request_error', param: 'n', message: /'n' greater than 1 is not supported by an Anthropic provider/ });
  t.equal(anth.received.length, before, 'the upstream was never called');
  const id = res.headers.get('x-request-id')!;
  let rows: Record<string, unknown>[] = [];
  await waitFor(async () => (rows = await gw.rows(`toString(request_id) = '${id}'`)).length === 1);
  t.match(rows[0], { status: 'failure', http_status: 400, error_type: 'TOLLGATE_ERR_NOT_SUPPORTED', provider: 'anth' }, 'recorded like every refused request');

  const one = await openai.chat.completions.create({ model: 'anth/claude-haiku-4-5', n: 1, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(one.choices.length, 1, 'n = 1 passes');
  t.notOk('n' in anth.received.at(-1)!.body, 'and sends nothing for it');
});

t.test('response_format json_schema to Anthropic: a forced json_response tool, whose call is the answer text', async (t) => {
  for (const stream of [false, true]) {
    anth.next({ kind: 'tool_use', name: 'json_response', input: { city: 'Paris' }, preamble: '' });
    const body = {
      model: 'anth/claude-open',
      messages: [{ role: 'user' as const, content: 'Where is the Eiffel Tower?' }],
      response_format: { type: 'json_schema' as const, json_schema: { name: 'place', schema: SCHEMA } },
    };
    const { data, response } = stream
      ? { data: await openai.chat.completions.stream(body).finalChatCompletion(), response: null }
      : await openai.chat.completions.create(body).withResponse();
    const sent = anth.received.at(-1)!.body;
    t.strictSame(sent.tools, [{ name: 'json_response', description: 'Give the answer as the input of this tool, in the JSON form its schema describes.', input_schema: SCHEMA }], `${stream ? 'streamed' : 'whole'}: the schema as a tool`);
    t.strictSame(sent.tool_choice, { type: 'tool', name: 'json_response' }, 'forced');
    const choice = data.choices[0]!;
    t.strictSame(JSON.parse(choice.message.content ?? ''), { city: 'Paris' }, 'the client gets the JSON as text');
    t.equal(choice.message.tool_calls?.length ?? 0, 0, 'and no tool call');
    t.equal(choice.finish_reason, 'stop');
    if (response !== null) t.equal(response.headers.get(HEADER), null, 'nothing dropped: no header');
  }

  // A model whose capabilities exclude structured_output: the schema is dropped (listed), JSON mode stays.
  anth.next({ kind: 'tool_use', name: 'json_response', input: { any: 'object' }, preamble: '' });
  const { data, response } = await openai.chat.completions
    .create({ model: 'anth/claude-haiku-4-5', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'place', schema: SCHEMA } } })
    .withResponse();
  t.strictSame((anth.received.at(-1)!.body.tools as { input_schema: unknown }[])[0]!.input_schema, { type: 'object' });
  t.equal(data.choices[0]!.message.content, '{"any":"object"}');
  t.equal(response.headers.get(HEADER), 'response_format', 'the schema is listed');
});

t.test('Anthropic -> Anthropic through a combo: cache_control and the web search server tool reach the upstream', async (t) => {
  const res = await post('/v1/messages', {
    model: 'claude-only',
    max_tokens: 200,
    system: [{ type: 'text', text: 'A long and stable system prompt.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'A long document.', cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: 'Question?' }] }],
    tools: [
      { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, cache_control: { type: 'ephemeral' } },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 2 },
    ],
  });
  t.equal(res.status, 200);
  await res.body?.cancel();
  const sent = anth.received.at(-1)!.body;
  t.strictSame(sent.system, [{ type: 'text', text: 'A long and stable system prompt.', cache_control: { type: 'ephemeral' } }]);
  t.strictSame(sent.messages, [{ role: 'user', content: [{ type: 'text', text: 'A long document.', cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: 'Question?' }] }]);
  t.strictSame(sent.tools, [
    { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, cache_control: { type: 'ephemeral' } },
    { type: 'web_search_20250305', name: 'web_search' },
  ]);
  t.equal(res.headers.get(HEADER), null);
});

t.test('what is not carried is listed: header on whole and streamed answers, span attribute, upstream body', async (t) => {
  const body = {
    model: 'anth/claude-haiku-4-5',
    messages: [{ role: 'user', content: 'hi' }],
    seed: 42,
    logit_bias: { '50256': -100 },
    prompt_cache_key: 'session-7',
    top_k: 40, // a vendor extension the Chat codec has no place for
    reasoning_effort: 'high', // claude-haiku-4-5 does not list `reasoning`: removed by the capabilities
    stop: ['END'],
  };
  const expected = 'logit_bias, prompt_cache_key, reasoning_effort, seed, top_k';
  for (const stream of [false, true]) {
    const res = await post('/v1/chat/completions', { ...body, stream });
    t.equal(res.status, 200);
    t.equal(res.headers.get(HEADER), expected, `${stream ? 'streamed' : 'whole'}: the header lists them, sorted`);
    t.equal(res.headers.get('content-type')?.startsWith(stream ? 'text/event-stream' : 'application/json'), true);
    await res.text();
    const sent = anth.received.at(-1)!.body;
    for (const k of ['seed', 'logit_bias', 'prompt_cache_key', 'top_k', 'thinking']) t.notOk(k in sent, `${k} not sent`);
    t.strictSame(sent.stop_sequences, ['END'], 'stop is carried');
    const span = await requestSpan(res.headers.get('x-request-id')!);
    t.strictSame(span.attributes['tollgate.dropped_params'], expected.split(', '), 'the span attribute is the same list');
  }

  const clean = await post('/v1/chat/completions', { model: 'anth/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }], stop: 'END' });
  await clean.text();
  t.equal(clean.headers.get(HEADER), null, 'nothing dropped: no header');
  t.notOk('tollgate.dropped_params' in (await requestSpan(clean.headers.get('x-request-id')!)).attributes, 'and no attribute');
});

t.test('Chat n = 2 with logprobs to Gemini: candidateCount and responseLogprobs upstream, two choices with logprobs back', async (t) => {
  const res = await openai.chat.completions.create({ model: 'gem/gemini-2.0-flash', messages: [{ role: 'user', content: 'hi' }], n: 2, logprobs: true, top_logprobs: 2, seed: 5 });
  const sent = gem.received.at(-1)!.body;
  t.strictSame(sent.generationConfig, { seed: 5, candidateCount: 2, responseLogprobs: true, logprobs: 2 });
  t.equal(res.choices.length, 2);
  for (const [i, choice] of res.choices.entries()) {
    t.equal(choice.index, i);
    t.equal(choice.message.content, DEFAULT_WORDS.join(''));
    const lps = choice.logprobs?.content ?? [];
    t.strictSame(lps.map((l) => l.token), DEFAULT_WORDS, `choice ${i}: one logprob per token`);
    t.strictSame(lps.map((l) => Math.round(l.logprob * 10) / 10), [-0.1, -0.2, -0.3, -0.4, -0.5]);
    t.strictSame(lps[0]!.top_logprobs.map((x) => x.token), ['Hello', 'alt1'], 'with the top alternatives');
  }

  const streamed = await post('/v1/chat/completions', { model: 'gem/gemini-2.0-flash', messages: [{ role: 'user', content: 'hi' }], n: 2, stream: true });
  t.equal(streamed.status, 400, 'several choices are whole answers only');
  t.match(((await streamed.json()) as { error: unknown }).error, { code: 'TOLLGATE_ERR_NOT_SUPPORTED', param: 'n' });
});

t.test('response_format json_schema to Gemini: responseMimeType and responseJsonSchema', async (t) => {
  const ask = (model: string) =>
    openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'place', schema: SCHEMA } } }).withResponse();
  const structured = await ask('gem/gemini-2.5-pro');
  t.strictSame(gem.received.at(-1)!.body.generationConfig, { responseMimeType: 'application/json', responseJsonSchema: SCHEMA });
  t.equal(structured.response.headers.get(HEADER), null);
  const plain = await ask('gem/gemini-2.0-flash');
  t.strictSame(gem.received.at(-1)!.body.generationConfig, { responseMimeType: 'application/json' }, 'without structured_output: JSON mode only');
  t.equal(plain.response.headers.get(HEADER), 'response_format', 'and the schema is listed');
});

t.test('a combo lists the drops of the attempt that served', async (t) => {
  anth.next({ kind: 'error', status: 500 });
  const res = await post('/v1/chat/completions', { model: 'claude-then-gemini', messages: [{ role: 'user', content: 'hi' }], seed: 3, user: 'u-9', prompt_cache_key: 'k' });
  t.equal(res.status, 200);
  await res.text();
  t.strictSame(anth.received.at(-1)!.body.metadata, { user_id: 'u-9' }, 'the first attempt (Anthropic) carried the user, dropped the seed');
  t.equal(gem.received.at(-1)!.body.generationConfig && (gem.received.at(-1)!.body.generationConfig as Record<string, unknown>).seed, 3, 'Gemini carried the seed');
  t.equal(res.headers.get(HEADER), 'prompt_cache_key, user', "Gemini's drops, not Anthropic's (prompt_cache_key, seed)");
});

t.test('a Responses client: web_search becomes the Anthropic server tool, prompt_cache_key is listed', async (t) => {
  for (const stream of [false, true]) {
    const res = await post('/v1/responses', { model: 'anth/claude-haiku-4-5', input: 'news?', tools: [{ type: 'web_search' }], prompt_cache_key: 'k-1', stream });
    t.equal(res.status, 200);
    await res.text();
    t.strictSame(anth.received.at(-1)!.body.tools, [{ type: 'web_search_20250305', name: 'web_search' }], stream ? 'streamed' : 'whole');
    t.equal(res.headers.get(HEADER), 'prompt_cache_key');
  }
});
