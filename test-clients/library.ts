// The cases of the two client libraries (the Vercel AI SDK, LangChain), which both speak all four formats: each
// format to the provider of its own format (one-shot, streaming, a tool round), each format to a provider of another
// format, and Anthropic's cache marker. A case is one run of the library's driver (drivers/*.cjs), a small script
// that loads the pinned library from the clients' cache folder and prints what it got as one JSON line.

import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { FAKE_ANTHROPIC_KEY } from '../test/helpers/fake-anthropic.js';
import { CLIENT_KEY, CLIENTS_DIR, MODELS, TOOL_ROUND, exchange, exitedOk, runClient, tempFolder, type Stack, type UpstreamName } from './helpers.js';

/** The library's four adapters, as the driver names them. */
export type Format = 'anthropic' | 'chat' | 'responses' | 'google';

const OWN: Record<Format, UpstreamName> = { anthropic: 'anthropic', chat: 'openai', responses: 'responses', google: 'gemini' };
const ENDPOINT: Record<Format, string> = { anthropic: 'messages', chat: 'chat.completions', responses: 'responses', google: 'generate_content' };
/** Another format's provider for each adapter: every format is the target of one cross-format case. */
const CROSS: Record<Format, UpstreamName> = { anthropic: 'gemini', chat: 'anthropic', responses: 'openai', google: 'responses' };
/** The text each fake answers. */
const ANSWER: Record<UpstreamName, string> = {
  anthropic: 'Hello from the fake Claude',
  openai: 'Hello from the fake upstream',
  responses: 'Hello from the Responses fake',
  gemini: 'Hello from the fake Gemini',
};
const FORMATS: Format[] = ['anthropic', 'chat', 'responses', 'google'];

interface DriverOut {
  text?: string;
  deltas?: string[];
  toolResults?: string[];
}

export function libraryCases(t: Test, stack: Stack, driver: 'ai-sdk' | 'langchain'): void {
  const script = fileURLToPath(new URL(`./drivers/${driver}.cjs`, import.meta.url));
  const cwd = tempFolder(t, `${driver}-cwd`);

  async function drive(t: Test, format: Format, mode: string, target: UpstreamName, prompt = 'Say hello') {
    const ex = await exchange(t, stack, { providers: [target], endpoint: ENDPOINT[format] }, () =>
      runClient(t, process.execPath, [script, format, mode, MODELS[target], prompt], {
        cwd,
        home: tempFolder(t, `${driver}-home`),
        env: { TOLLGATE_URL: stack.gw.url, TOLLGATE_KEY: CLIENT_KEY, CLIENTS_DIR },
      }));
    exitedOk(t, ex.value);
    const out = JSON.parse(ex.value.stdout.trim().split('\n').at(-1) || '{}') as DriverOut;
    return { ...ex, out };
  }

  for (const format of FORMATS) {
    const own = OWN[format];
    t.test(`one-shot: ${format} to its own format (${own})`, async (t) => {
      const { out, rows } = await drive(t, format, 'oneshot', own);
      t.equal(out.text, ANSWER[own], 'the answer reached the client');
      t.same(rows.map((r) => r.stream), [false], 'not streamed');
    });
  }

  for (const format of FORMATS) {
    const own = OWN[format];
    t.test(`streaming: ${format} to its own format (${own})`, async (t) => {
      const { out, rows } = await drive(t, format, 'stream', own);
      t.equal(out.text, ANSWER[own], 'the answer reached the client');
      t.ok((out.deltas ?? []).length > 1, `in several deltas (${(out.deltas ?? []).length})`);
      t.same(rows.map((r) => r.stream), [true], 'streamed');
    });
  }

  for (const format of FORMATS) {
    const own = OWN[format];
    t.test(`tool round: ${format} to its own format (${own})`, async (t) => {
      stack.toolCall = { name: 'get_weather', input: { city: 'Paris' } };
      const { out, upstream } = await drive(t, format, 'tool', own, `${TOOL_ROUND}: the weather in Paris?`);
      t.same(out.toolResults, ['tollgate-weather-3c8e: sunny in Paris'], 'the library ran the tool');
      t.equal(upstream.length, 2, 'two model calls: the tool call, then the answer');
      t.ok(JSON.stringify(upstream.at(-1)!.body).includes('tollgate-weather-3c8e'), 'the second request carries the tool result');
      t.equal(out.text, ANSWER[own]);
    });
  }

  for (const format of FORMATS) {
    const target = CROSS[format];
    t.test(`cross-format: ${format} to the ${target} provider, with a tool round`, async (t) => {
      stack.toolCall = { name: 'get_weather', input: { city: 'Paris' } };
      const { out, upstream } = await drive(t, format, 'tool', target, `${TOOL_ROUND}: the weather in Paris?`);
      t.same(out.toolResults, ['tollgate-weather-3c8e: sunny in Paris'], 'the library ran the tool');
      t.equal(upstream.length, 2, 'the tool call, then the answer');
      t.ok(JSON.stringify(upstream.at(-1)!.body).includes('tollgate-weather-3c8e'), `the tool result reached ${target} in its own format`);
      t.equal(out.text, ANSWER[target]);
    });
  }

  t.test('same format: the cache marker and the version header reach Anthropic', async (t) => {
    const { out, upstream } = await drive(t, 'anthropic', 'cache', 'anthropic');
    t.equal(out.text, ANSWER.anthropic);
    for (const u of upstream) {
      t.ok(JSON.stringify(u.body.messages).includes('"cache_control":{"type":"ephemeral"}'), 'cache_control as the library wrote it');
      t.equal(u.body.model, 'claude-sonnet-4-5', 'only the provider prefix removed');
      t.equal(u.headers['anthropic-version'], '2023-06-01');
      t.equal(u.headers['x-api-key'], FAKE_ANTHROPIC_KEY, "the provider's key, not the client's");
    }
  });
}
