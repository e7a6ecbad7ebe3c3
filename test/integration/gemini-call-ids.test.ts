// A tool loop of an Anthropic client (Claude Code's shape) against a Gemini upstream, whose functionCall parts carry
// no id: the ids the gateway makes up must differ from one answer to the next (Gemini's own responseId in them),
// streamed or not, or the client's history holds two tool_use blocks with one id, which Anthropic's API refuses
// ("tool_use ids must be unique") the moment that history reaches an Anthropic upstream (a combo's fallback, a model
// switch). The history sent back to Gemini keeps each call paired with its own result.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { startApp } from '../helpers/app.js';
import { geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { TOOL } from '../helpers/clients.js';

const up = await startFakeGemini(t);
const gw = await startApp(t, { providers: { gem: geminiProvider(up) } });
const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
const tools = [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema as Anthropic.Tool.InputSchema }];

type Block = Anthropic.ContentBlockParam;

for (const stream of [false, true]) {
  t.test(`${stream ? 'streamed' : 'whole'} answers: three turns of tool calls, three distinct ids`, async (t) => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris, then Rome, then Oslo?' }];
    const ids: string[] = [];
    for (const city of ['Paris', 'Rome', 'Oslo']) {
      up.next({ kind: 'call', args: { city } });
      const req = { model: 'gem/gemini-2.5-flash', max_tokens: 256, tools, messages };
      const content: Block[] = stream
        ? ((await client.messages.stream(req).finalMessage()).content as Block[])
        : ((await client.messages.create(req)).content as Block[]);
      const call = content.find((b): b is Anthropic.ToolUseBlockParam => b.type === 'tool_use');
      t.ok(call, `turn ${city}: a tool_use`);
      t.same(call!.input, { city });
      t.match(call!.id, /^call_[A-Za-z0-9_-]+_0$/, `turn ${city}: a made-up id of the answer's own (${call!.id})`);
      ids.push(call!.id);
      messages.push({ role: 'assistant', content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: `sunny in ${city}` }] });
    }
    t.equal(new Set(ids).size, 3, `no two answers' calls share an id: ${ids.join(', ')}`);
    // The last request carried the first two turns back to Gemini: each functionCall with its own id, each
    // functionResponse naming the same id as its call.
    const sent = up.received.at(-1)!.body.contents as { role: string; parts: Record<string, { id?: string; name?: string; args?: unknown }>[] }[];
    const calls = sent.flatMap((c) => c.parts.flatMap((p) => (p.functionCall ? [p.functionCall] : [])));
    const answers = sent.flatMap((c) => c.parts.flatMap((p) => (p.functionResponse ? [p.functionResponse] : [])));
    t.same(calls.map((c) => c.id), ids.slice(0, 2), 'the history sent back: the calls with their ids');
    t.same(answers.map((a) => a.id), ids.slice(0, 2), 'each result with its own call\'s id');
  });
}
