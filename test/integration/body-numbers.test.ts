// Numbers JavaScript cannot hold, from each official SDK through Tollgate to a fake upstream on a real socket
// (src/core/raw-numbers.ts, docs/translation.md "Numbers in a request body"): on every same-format path (OpenAI Chat,
// Responses, Anthropic Messages, Gemini) the upstream receives a seed of 2^53+1, a schema's `maximum` of 2^64-1 and
// a `-0` byte for byte as the client wrote them, and a translation that carries a tool's schema carries them too.
//
// A JavaScript SDK cannot hold 9007199254740993 in a number (a Python client sends it as is): each SDK is given a
// fetch that writes the literal where the test put a marker string, so the gateway sees what such a client sends.

import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startApp } from '../helpers/app.js';
import { answerFor, fakeProvider, formatOf } from '../helpers/fake-any-format.js';
import { listenLoopback } from '../helpers/loopback.js';

const SEED = '9007199254740993';
const MAX = '18446744073709551615';
const LITERALS: Readonly<Record<string, string>> = { '"@@seed@@"': SEED, '"@@max@@"': MAX, '"@@neg0@@"': '-0' };

/** `real`, writing the markers' literals into the JSON body the SDK serialised. */
const withLiterals = (real: typeof fetch): typeof fetch => (input, init) => {
  let body = init?.body;
  if (typeof body === 'string') for (const [marker, literal] of Object.entries(LITERALS)) body = body.replaceAll(marker, literal);
  return real(input, { ...init, body });
};
const literalFetch = withLiterals(globalThis.fetch);

// The fake: each format's small answer (fake-any-format.ts), and the raw text of every request body it received.
const received: string[] = [];
const up = await listenLoopback(t, async (req: IncomingMessage, res: ServerResponse) => {
  let raw = '';
  for await (const c of req) raw += String(c);
  received.push(raw);
  const { text, type } = answerFor(formatOf(req.url!), req.url!, JSON.parse(raw) as Record<string, unknown>, true);
  res.writeHead(200, { 'content-type': type });
  res.end(text);
}, (_err, res) => res.destroy());

const gw = await startApp(t, {
  providers: {
    chat: fakeProvider(up.port, 'ok', 'openai'),
    resp: fakeProvider(up.port, 'ok', 'openai-responses'),
    anth: fakeProvider(up.port, 'ok', 'anthropic'),
    gem: fakeProvider(up.port, 'ok', 'gemini'),
  },
});

const SCHEMA = { type: 'object', properties: { n: { type: 'integer', maximum: '@@max@@', minimum: '@@neg0@@' } } };
const last = (): string => received.at(-1)!;

t.test('OpenAI SDK, Chat Completions, same format: seed, schema maximum and -0 as written', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: literalFetch });
  const body = {
    model: 'chat/m', messages: [{ role: 'user' as const, content: 'hi' }], seed: '@@seed@@' as unknown as number,
    tools: [{ type: 'function' as const, function: { name: 'f', parameters: SCHEMA } }],
  };
  await client.chat.completions.create(body);
  t.match(last(), `"seed":${SEED}`, 'the seed, not 9007199254740992');
  t.match(last(), `"maximum":${MAX}`, 'the maximum, not 18446744073709552000');
  t.match(last(), '"minimum":-0', '-0, not 0');
  t.match(last(), '"model":"m"', 'the model rewritten as before');
  const stream = await client.chat.completions.create({ ...body, stream: true });
  for await (const _ of stream);
  t.match(last(), `"seed":${SEED}`, 'streamed too');
  t.match(last(), `"maximum":${MAX}`);
});

t.test('OpenAI SDK, Responses, same format', async (t) => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: literalFetch });
  await client.responses.create({ model: 'resp/m', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: SCHEMA, strict: false }], max_output_tokens: '@@max@@' as unknown as number });
  t.match(last(), `"maximum":${MAX}`);
  t.match(last(), '"minimum":-0');
  t.match(last(), `"max_output_tokens":${MAX}`, 'a huge max_output_tokens is a number to the checks, and goes as written');
});

t.test('Anthropic SDK, Messages, same format', async (t) => {
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, fetch: literalFetch });
  await client.messages.create({ model: 'anth/m', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'f', input_schema: SCHEMA as Anthropic.Tool.InputSchema }] });
  t.match(last(), `"maximum":${MAX}`);
  t.match(last(), '"minimum":-0');
});

t.test('Google GenAI SDK, Gemini, same format', async (t) => {
  // The Google SDK takes no fetch of its own: the global one is swapped for the test's while it runs.
  const original = globalThis.fetch;
  globalThis.fetch = withLiterals(original);
  try {
    const genai = new GoogleGenAI({ apiKey: 'client', httpOptions: { baseUrl: gw.url } });
    await genai.models.generateContent({ model: 'gem/m', contents: 'hi', config: { responseJsonSchema: SCHEMA, seed: '@@seed@@' as unknown as number } });
  } finally {
    globalThis.fetch = original;
  }
  t.match(last(), `"maximum":${MAX}`);
  t.match(last(), '"minimum":-0');
  t.match(last(), `"seed":${SEED}`);
});

t.test('Anthropic SDK to an OpenAI Chat provider (translated): the tool schema it carries keeps its numbers', async (t) => {
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, fetch: literalFetch });
  await client.messages.create({ model: 'chat/m', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'f', input_schema: SCHEMA as Anthropic.Tool.InputSchema }] });
  t.match(last(), '"messages":[', 'translated to Chat');
  t.match(last(), `"maximum":${MAX}`);
  t.match(last(), '"minimum":-0');
});
