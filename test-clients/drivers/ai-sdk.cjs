// Drive the Vercel AI SDK (ai + @ai-sdk/*) from the clients' cache folder against the gateway, one case per run:
//   node ai-sdk.cjs <anthropic|chat|responses|google> <oneshot|stream|tool|cache> <model> <prompt>
// with TOLLGATE_URL, TOLLGATE_KEY and CLIENTS_DIR in the environment. Prints one JSON line: the text, the stream
// deltas, the usage the SDK reports, the tool results. CommonJS, loaded from CLIENTS_DIR, so the SDK and zod are
// the pinned copies there and not the repo's.

const { createRequire } = require('node:module');
const path = require('node:path');

const load = createRequire(path.join(process.env.CLIENTS_DIR, 'package.json'));
const { generateText, streamText, tool, stepCountIs } = load('ai');
const { createAnthropic } = load('@ai-sdk/anthropic');
const { createOpenAI } = load('@ai-sdk/openai');
const { createGoogleGenerativeAI } = load('@ai-sdk/google');
const { z } = load('zod');

const [format, mode, modelId, prompt] = process.argv.slice(2);
const url = process.env.TOLLGATE_URL;
const apiKey = process.env.TOLLGATE_KEY;

function model() {
  switch (format) {
    case 'anthropic': return createAnthropic({ baseURL: `${url}/v1`, apiKey })(modelId);
    case 'chat': return createOpenAI({ baseURL: `${url}/v1`, apiKey }).chat(modelId);
    case 'responses': return createOpenAI({ baseURL: `${url}/v1`, apiKey }).responses(modelId);
    case 'google': return createGoogleGenerativeAI({ baseURL: `${url}/v1beta`, apiKey })(modelId);
    default: throw new Error(`unknown format ${format}`);
  }
}

const weather = tool({
  description: 'Current weather in a city',
  inputSchema: z.object({ city: z.string(), unit: z.string().optional() }),
  execute: async ({ city }) => `tollgate-weather-3c8e: sunny in ${city}`,
});

async function main() {
  if (mode === 'oneshot') {
    const r = await generateText({ model: model(), prompt });
    return { text: r.text, usage: r.usage };
  }
  if (mode === 'stream') {
    const s = streamText({ model: model(), prompt });
    const deltas = [];
    for await (const d of s.textStream) deltas.push(d);
    return { text: deltas.join(''), deltas, usage: await s.usage };
  }
  if (mode === 'tool') {
    const r = await generateText({ model: model(), prompt, tools: { get_weather: weather }, stopWhen: stepCountIs(3) });
    return { text: r.text, usage: r.totalUsage, steps: r.steps.length, toolResults: r.steps.flatMap((s) => s.toolResults.map((t) => t.output)) };
  }
  if (mode === 'cache') {
    // Anthropic prompt caching as the SDK documents it: a cache breakpoint on a message part.
    const r = await generateText({
      model: model(),
      messages: [{ role: 'user', content: [{ type: 'text', text: prompt, providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } }] }],
    });
    return { text: r.text, usage: r.usage };
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
