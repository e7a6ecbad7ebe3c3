// Drive LangChain's chat models (@langchain/anthropic, @langchain/openai, @langchain/google-genai) from the clients'
// cache folder against the gateway, one case per run:
//   node langchain.cjs <anthropic|chat|responses|google> <oneshot|stream|tool|cache> <model> <prompt>
// with TOLLGATE_URL, TOLLGATE_KEY and CLIENTS_DIR in the environment. Prints one JSON line: the text, the stream
// deltas, LangChain's usage_metadata, the tool results. CommonJS, loaded from CLIENTS_DIR (the pinned copies).

const { createRequire } = require('node:module');
const path = require('node:path');

const load = createRequire(path.join(process.env.CLIENTS_DIR, 'package.json'));
const { ChatAnthropic } = load('@langchain/anthropic');
const { ChatOpenAI } = load('@langchain/openai');
const { ChatGoogleGenerativeAI } = load('@langchain/google-genai');
const { HumanMessage, ToolMessage } = load('@langchain/core/messages');
const { tool } = load('@langchain/core/tools');
const { z } = load('zod');

const [format, mode, model, prompt] = process.argv.slice(2);
const url = process.env.TOLLGATE_URL;
const apiKey = process.env.TOLLGATE_KEY;

function chat() {
  switch (format) {
    // The Anthropic SDK underneath appends /v1/messages to the origin.
    case 'anthropic': return new ChatAnthropic({ model, apiKey, anthropicApiUrl: url, maxRetries: 0 });
    case 'chat': return new ChatOpenAI({ model, apiKey, configuration: { baseURL: `${url}/v1` }, maxRetries: 0 });
    case 'responses': return new ChatOpenAI({ model, apiKey, configuration: { baseURL: `${url}/v1` }, useResponsesApi: true, maxRetries: 0 });
    // A model with a slash is a resource name to the Google SDK: /v1beta/gemini/gemini-2.5-flash:generateContent.
    case 'google': return new ChatGoogleGenerativeAI({ model, apiKey, baseUrl: url, maxRetries: 0 });
    default: throw new Error(`unknown format ${format}`);
  }
}

const text = (m) => (typeof m.content === 'string' ? m.content : m.content.filter((b) => b.type === 'text').map((b) => b.text).join(''));

const weather = tool(async ({ city }) => `tollgate-weather-3c8e: sunny in ${city}`, {
  name: 'get_weather',
  description: 'Current weather in a city',
  schema: z.object({ city: z.string(), unit: z.string().optional() }),
});

async function main() {
  if (mode === 'oneshot') {
    const m = await chat().invoke(prompt);
    return { text: text(m), usage: m.usage_metadata };
  }
  if (mode === 'stream') {
    const deltas = [];
    let usage;
    for await (const c of await chat().stream(prompt)) {
      const t = text(c);
      if (t !== '') deltas.push(t);
      if (c.usage_metadata) usage = c.usage_metadata;
    }
    return { text: deltas.join(''), deltas, usage };
  }
  if (mode === 'tool') {
    // The tool loop as LangChain's docs write it: the model's tool calls run, their results go back as ToolMessages.
    const model = chat().bindTools([weather]);
    const messages = [new HumanMessage(prompt)];
    const first = await model.invoke(messages);
    messages.push(first);
    const toolResults = [];
    for (const call of first.tool_calls ?? []) {
      const result = await weather.invoke(call.args);
      toolResults.push(result);
      messages.push(new ToolMessage({ content: result, tool_call_id: call.id }));
    }
    const last = await model.invoke(messages);
    return { text: text(last), toolResults, calls: (first.tool_calls ?? []).map((c) => c.name) };
  }
  if (mode === 'cache') {
    // Anthropic prompt caching as @langchain/anthropic documents it: cache_control on a content block.
    const m = await chat().invoke([new HumanMessage({ content: [{ type: 'text', text: prompt, cache_control: { type: 'ephemeral' } }] })]);
    return { text: text(m), usage: m.usage_metadata };
  }
  throw new Error(`unknown mode ${mode}`);
}

main().then(
  (out) => process.stdout.write(`${JSON.stringify(out)}\n`),
  (err) => {
    process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  },
);
