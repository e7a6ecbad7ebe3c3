// A Gemini REST client that writes the API's snake_case field names (system_instruction, inline_data {mime_type,
// data}, function_call, function_response, function_declarations, generation_config, ...: Google's curl examples)
// reaches a provider of another format with its system prompt, image, tool call and tool result, its
// generation_config read; what the target cannot carry is listed in x-tollgate-dropped-params under the client's
// spelling; both spellings of one field are a 400 naming it; the same body to a gemini provider passes byte for byte.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeAnyFormat } from '../helpers/fake-any-format.js';

type Json = Record<string, unknown>;

const up = await startFakeAnyFormat(t);
const gw = await startApp(t, {
  providers: {
    oai: fakeProvider(up.port, 'ok', 'openai'),
    resp: fakeProvider(up.port, 'ok', 'openai-responses'),
    ant: fakeProvider(up.port, 'ok', 'anthropic'),
    gem: fakeProvider(up.port, 'ok', 'gemini'),
  },
});

const IMAGE = '/9j/4AAQSkZJRg==';
const BODY = {
  system_instruction: { parts: [{ text: 'You are a cat.' }] },
  contents: [
    { role: 'user', parts: [{ text: 'What is in this picture? Then look up the weather.' }, { inline_data: { mime_type: 'image/jpeg', data: IMAGE } }] },
    { role: 'model', parts: [{ function_call: { name: 'weather', args: { city_name: 'Paris' } } }] },
    { role: 'user', parts: [{ function_response: { name: 'weather', response: { temp_c: 20 } } }] },
  ],
  tools: [{ function_declarations: [{ name: 'weather', description: 'Weather', parameters: { type: 'OBJECT', properties: { city_name: { type: 'STRING' } }, required: ['city_name'] } }] }],
  tool_config: { function_calling_config: { mode: 'AUTO' } },
  generation_config: { max_output_tokens: 300, temperature: 0.5, stop_sequences: ['END'], seed: 7, response_modalities: ['TEXT'] },
  safety_settings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
};

async function post(model: string, body: unknown): Promise<{ status: number; dropped: string | null; json: Json }> {
  const r = await fetch(`${gw.url}/v1beta/models/${model}:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, dropped: r.headers.get('x-tollgate-dropped-params'), json: (await r.json()) as Json };
}

const sent = (): Json => JSON.parse(up.sent.received) as Json;
const text = (v: unknown): string => String(JSON.stringify(v));

/** Per target: where the system prompt, the image, the call and its result are in the body it received. */
const CHECKS: Record<string, (b: Json) => { system: unknown; image: boolean; call: boolean; result: boolean; max: unknown; stop: unknown; tool: boolean }> = {
  oai: (b) => {
    const msgs = b.messages as Json[];
    return {
      system: msgs[0]!.role === 'system' ? msgs[0]!.content : undefined,
      image: text(msgs).includes(`data:image/jpeg;base64,${IMAGE}`),
      call: msgs.some((m) => text(m.tool_calls).includes('weather') && text(m.tool_calls).includes('city_name')),
      result: msgs.some((m) => m.role === 'tool' && text(m.content).includes('temp_c')),
      max: b.max_completion_tokens ?? b.max_tokens,
      stop: b.stop,
      tool: text(b.tools).includes('city_name'),
    };
  },
  resp: (b) => {
    const items = b.input as Json[];
    return {
      system: b.instructions,
      image: text(items).includes(`data:image/jpeg;base64,${IMAGE}`),
      call: items.some((i) => i.type === 'function_call' && i.name === 'weather' && text(i.arguments).includes('city_name')),
      result: items.some((i) => i.type === 'function_call_output' && text(i.output).includes('temp_c')),
      max: b.max_output_tokens,
      stop: undefined,
      tool: text(b.tools).includes('city_name'),
    };
  },
  ant: (b) => {
    const blocks = (b.messages as Json[]).flatMap((m) => m.content as Json[]);
    return {
      system: b.system,
      image: blocks.some((x) => x.type === 'image' && (x.source as Json).data === IMAGE && (x.source as Json).media_type === 'image/jpeg'),
      call: blocks.some((x) => x.type === 'tool_use' && x.name === 'weather' && text(x.input) === '{"city_name":"Paris"}'),
      result: blocks.some((x) => x.type === 'tool_result' && text(x.content).includes('temp_c')),
      max: b.max_tokens,
      stop: b.stop_sequences,
      tool: text(b.tools).includes('city_name'),
    };
  },
};

const DROPPED: Record<string, string[]> = {
  oai: ['generation_config.response_modalities', 'safety_settings'],
  resp: ['generation_config.response_modalities', 'generation_config.seed', 'generation_config.stop_sequences', 'safety_settings'],
  ant: ['generation_config.response_modalities', 'generation_config.seed', 'safety_settings'],
};

for (const provider of ['oai', 'resp', 'ant']) {
  t.test(`snake_case Gemini body to ${provider}: every part arrives; the rest is listed`, async (t) => {
    const r = await post(`${provider}/m`, BODY);
    t.equal(r.status, 200);
    const got = CHECKS[provider]!(sent());
    t.match(text(got.system), 'You are a cat.', 'system_instruction arrives as the system prompt');
    t.ok(got.image, 'the inline_data image arrives, with its mime_type');
    t.ok(got.call, 'the function_call arrives with its args as written (city_name, not renamed)');
    t.ok(got.result, 'the function_response arrives with its response as written (temp_c)');
    t.ok(got.tool, 'the function_declarations arrive, their parameters as written');
    t.equal(got.max, 300, 'generation_config.max_output_tokens is read');
    if (provider !== 'resp') t.same(got.stop, ['END'], 'generation_config.stop_sequences is read');
    t.same(r.dropped?.split(', '), DROPPED[provider], 'what the target cannot take is listed in the client spelling');
    t.equal(text((r.json.candidates as Json[])[0]!.content).includes('hi'), true, 'the answer comes back');
    const row = (await gw.rows("kind = 'request'")).at(-1)!;
    t.same([row.status, Number(row.input_tokens), Number(row.output_tokens), row.usage_source], ['success', 11, 3, 'reported'], 'the usage row');
  });
}

t.test('both spellings of one field: 400 naming the field, nothing sent', async (t) => {
  const before = up.sent.requests;
  for (const [body, param] of [
    [{ ...BODY, systemInstruction: BODY.system_instruction }, 'system_instruction'],
    [{ contents: [{ role: 'user', parts: [{ inline_data: { mime_type: 'image/png', mimeType: 'image/png', data: IMAGE } }] }] }, 'contents[0].parts[0].inline_data.mime_type'],
    [{ contents: BODY.contents, generationConfig: { topP: 0.5, top_p: 0.5 } }, 'generationConfig.top_p'],
  ] as const) {
    const r = await post('ant/m', body);
    t.equal(r.status, 400);
    t.match(r.json, { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST', param } }, param);
  }
  t.equal(up.sent.requests, before, 'no upstream call');
});

t.test('a snake_case body\'s refusals name its fields as it spelled them', async (t) => {
  const before = up.sent.requests;
  for (const [body, param, message] of [
    [{ contents: BODY.contents, generation_config: { temperature: 'hot' } }, 'generation_config.temperature', /temperature/],
    [{ contents: [{ role: 'user', parts: [{ inline_data: { mime_type: 'image/png' } }] }] }, 'contents[0].parts[0].inline_data', /^inline_data needs mime_type and data strings/],
  ] as const) {
    const r = await post('ant/m', body);
    t.equal(r.status, 400, param);
    t.match(r.json, { error: { code: 'TOLLGATE_ERR_INVALID_REQUEST', param, message } }, param);
  }
  const camel = await post('ant/m', { contents: BODY.contents, generationConfig: { temperature: 'hot' } });
  t.match(camel.json, { error: { param: 'generationConfig.temperature' } }, 'a camelCase body keeps its names');
  t.equal(up.sent.requests, before, 'no upstream call');
});

t.test('the same snake_case body to a gemini provider passes byte for byte', async (t) => {
  const r = await post('gem/m', BODY);
  t.equal(r.status, 200);
  t.equal(up.sent.received, JSON.stringify(BODY), 'the upstream got the client body as written');
  t.equal(r.dropped, null, 'nothing dropped');
});
