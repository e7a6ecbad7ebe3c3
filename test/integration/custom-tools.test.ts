// OpenAI custom (freeform) tools on a translated route (src/wire/custom-tool.ts): the official `openai` SDK, as a
// Responses client declaring a custom tool with a grammar (Codex CLI's `apply_patch`), against a fake Anthropic
// upstream on loopback. The upstream gets a function tool with one required string `input` (the grammar in its
// description, `tools.custom.format` listed as dropped); the model's tool_use comes back as a custom_tool_call item
// with the input, whole and streamed (the custom_tool_call_input events in order); the second turn's
// custom_tool_call / custom_tool_call_output items reach the upstream as tool_use / tool_result, and a custom
// tool_choice forces the tool.

import t from 'tap';
import OpenAI from 'openai';
import { startApp } from '../helpers/app.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';

const up = await startFakeAnthropic(t);
const gw = await startApp(t, { providers: { anth: fakeAnthropicProvider(up.url) } });
const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'gateway-key-not-for-upstream', maxRetries: 0 });

const MODEL = 'anth/claude-haiku-4-5';
const GRAMMAR = 'start: "*** Begin Patch" LF body "*** End Patch"';
const TOOL = { type: 'custom' as const, name: 'apply_patch', description: 'Apply a patch to files', format: { type: 'grammar' as const, syntax: 'lark' as const, definition: GRAMMAR } };
const PATCH = '*** Begin Patch\n*** Add File: a.txt\n+hello "world"\n*** End Patch';
const useTool = { kind: 'tool_use' as const, name: 'apply_patch', id: 'toolu_patch1', input: { input: PATCH }, preamble: '' };

type Json = Record<string, unknown>;

t.test('the custom tool reaches Anthropic as a function of one string `input`; the grammar is listed as dropped', async (t) => {
  up.next(useTool);
  const { data, response } = await openai.responses.create({ model: MODEL, input: 'add a.txt', tools: [TOOL] }).withResponse();
  const tools = up.last().tools as Json[];
  t.equal(tools.length, 1);
  const tool = tools[0]!;
  t.equal(tool.name, 'apply_patch');
  t.equal(tool.description, 'Apply a patch to files');
  const schema = tool.input_schema as { type: string; properties: { input: { type: string; description: string } }; required: string[] };
  t.equal(schema.type, 'object');
  t.same(Object.keys(schema.properties), ['input']);
  t.equal(schema.properties.input.type, 'string');
  t.match(schema.properties.input.description, GRAMMAR, 'the grammar travels in the parameter description');
  t.same(schema.required, ['input']);
  t.equal(response.headers.get('x-tollgate-dropped-params'), 'tools.custom.format');

  t.equal(data.status, 'completed');
  t.equal(data.output.length, 1);
  const item = data.output[0]!;
  if (item.type !== 'custom_tool_call') throw new Error(`not a custom_tool_call: ${JSON.stringify(item)}`);
  t.equal(item.name, 'apply_patch');
  t.equal(item.call_id, 'toolu_patch1');
  t.equal(item.input, PATCH, 'the input is the string argument, not its JSON');
  t.match(item, { status: 'completed' });
});

t.test('a custom tool without a grammar drops nothing', async (t) => {
  up.next(useTool);
  const { response } = await openai.responses.create({ model: MODEL, input: 'add a.txt', tools: [{ type: 'custom', name: 'apply_patch' }] }).withResponse();
  t.equal(response.headers.get('x-tollgate-dropped-params'), null);
  const tool = (up.last().tools as Json[])[0]!;
  t.notOk('description' in tool);
  t.same((tool.input_schema as Json).required, ['input']);
});

t.test('streamed: custom_tool_call_input events in order, then the item with its input', async (t) => {
  up.next(useTool);
  const stream = await openai.responses.create({ model: MODEL, input: 'add a.txt', tools: [TOOL], stream: true });
  const events: Json[] = [];
  for await (const e of stream) events.push(e as unknown as Json);
  const types = events.map((e) => e.type as string).filter((x) => !['response.created', 'response.in_progress'].includes(x));
  t.same(types, [
    'response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done', 'response.completed',
  ]);
  const [added, delta, done, itemDone, completed] = types.map((x) => events.find((e) => e.type === x)!);
  t.match(added, { output_index: 0, item: { type: 'custom_tool_call', call_id: 'toolu_patch1', name: 'apply_patch', input: '', status: 'in_progress' } });
  const id = (added!.item as Json).id;
  t.same({ item_id: delta!.item_id, output_index: delta!.output_index, delta: delta!.delta }, { item_id: id, output_index: 0, delta: PATCH });
  t.same({ item_id: done!.item_id, output_index: done!.output_index, input: done!.input }, { item_id: id, output_index: 0, input: PATCH });
  t.match(itemDone, { output_index: 0, item: { id, type: 'custom_tool_call', input: PATCH, status: 'completed' } });
  t.match((completed!.response as Json).output, [{ type: 'custom_tool_call', input: PATCH }]);
  const seq = events.map((e) => e.sequence_number as number);
  t.same(seq, seq.map((_, i) => i), 'sequence numbers count up from 0');
});

t.test('streamed through the SDK helper: the final response carries the custom call', async (t) => {
  up.next(useTool);
  const final = await openai.responses.stream({ model: MODEL, input: 'add a.txt', tools: [TOOL] }).finalResponse();
  t.match(final.output, [{ type: 'custom_tool_call', name: 'apply_patch', input: PATCH }]);
});

t.test('the second turn: custom_tool_call and its output become tool_use and tool_result; tool_choice custom forces it', async (t) => {
  up.next({ kind: 'ok' });
  const res = await openai.responses.create({
    model: MODEL,
    tools: [TOOL],
    tool_choice: { type: 'custom', name: 'apply_patch' },
    input: [
      { role: 'user', content: 'add a.txt' },
      { type: 'custom_tool_call', call_id: 'toolu_patch1', name: 'apply_patch', input: PATCH },
      { type: 'custom_tool_call_output', call_id: 'toolu_patch1', output: 'Done: a.txt added' },
    ],
  });
  t.equal(res.status, 'completed');
  const body = up.last();
  t.same(body.tool_choice, { type: 'tool', name: 'apply_patch' });
  const messages = body.messages as { role: string; content: Json[] }[];
  t.equal(messages.length, 3);
  t.match(messages[1], { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_patch1', name: 'apply_patch', input: { input: PATCH } }] });
  t.match(messages[2], { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_patch1', content: 'Done: a.txt added' }] });
});
