// Claude Code (`claude -p`, non-interactive) against Tollgate's /v1/messages: ANTHROPIC_BASE_URL is the gateway's
// origin, ANTHROPIC_API_KEY the gateway key, the model `<provider>/<model>`. Claude Code always streams from the
// upstream; "one-shot" is its JSON result, "streaming" its stream-json events with partial messages.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_ANTHROPIC_KEY, FAKE_USAGE } from '../test/helpers/fake-anthropic.js';
import { CLIENT_KEY, MODELS, TOOL_ROUND, clientBin, exchange, exitedOk, jsonLines, runClient, startStack, tempFolder, type Stack } from './helpers.js';

const CLAUDE = clientBin('claude');
const stack: Stack = await startStack(t);
const cwd = tempFolder(t, 'claude-cwd');

function claude(args: string[]) {
  return runClient(t, CLAUDE, ['--model', MODELS.anthropic, ...args], {
    cwd,
    home: tempFolder(t, 'claude-home'),
    env: {
      ANTHROPIC_BASE_URL: stack.gw.url,
      ANTHROPIC_API_KEY: CLIENT_KEY,
      // No update checks, telemetry, error reports or other traffic besides the model calls.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    },
  });
}

/** The final `result` object of a json or stream-json run. */
const resultOf = (stdout: string) => jsonLines(stdout).find((o) => o.type === 'result') as { result?: string; is_error?: boolean; usage?: Record<string, number> } | undefined;

t.test('one-shot: --output-format json', async (t) => {
  const { value: run, rows } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () => claude(['-p', 'Say hello', '--output-format', 'json']));
  exitedOk(t, run);
  const result = resultOf(run.stdout);
  t.equal(result?.is_error, false);
  t.equal(result?.result, 'Hello from the fake Claude', 'the answer reached the client');
  t.match(result?.usage, { input_tokens: FAKE_USAGE.input_tokens, cache_read_input_tokens: FAKE_USAGE.cache_read_input_tokens, cache_creation_input_tokens: FAKE_USAGE.cache_creation_input_tokens, output_tokens: FAKE_USAGE.output_tokens }, 'the client saw the upstream usage');
  t.same(rows.map((r) => r.stream), [true], 'Claude Code streams from the upstream');
});

t.test('streaming: --output-format stream-json with partial messages', async (t) => {
  const { value: run } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () =>
    claude(['-p', 'Say hello', '--output-format', 'stream-json', '--verbose', '--include-partial-messages']));
  exitedOk(t, run);
  const deltas = jsonLines(run.stdout)
    .filter((o) => o.type === 'stream_event')
    .map((o) => (o.event as { type?: string; delta?: { type?: string; text?: string } }))
    .filter((e) => e.type === 'content_block_delta' && e.delta?.type === 'text_delta')
    .map((e) => e.delta!.text);
  t.same(deltas, ['Hello', ' from', ' the', ' fake', ' Claude'], 'the text deltas arrived one by one');
  t.equal(resultOf(run.stdout)?.result, 'Hello from the fake Claude');
});

t.test('tool round: the model calls Read, Claude Code runs it and sends the result back', async (t) => {
  const file = join(cwd, 'note.txt');
  writeFileSync(file, 'tollgate-note-7f3a\n');
  stack.toolCall = { name: 'Read', input: { file_path: file } };
  const { value: run, upstream } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () =>
    claude(['-p', `${TOOL_ROUND}: read note.txt`, '--allowedTools', 'Read', '--output-format', 'stream-json', '--verbose']));
  exitedOk(t, run);
  t.equal(upstream.length, 2, 'two model calls: the tool call, then the answer');
  const last = JSON.stringify(upstream.at(-1)!.body.messages);
  t.ok(last.includes('"type":"tool_result"'), 'the second request carries the tool result');
  t.ok(last.includes('tollgate-note-7f3a'), 'with the file the tool read');
  t.equal(resultOf(run.stdout)?.result, 'Hello from the fake Claude');
});

for (const target of ['openai', 'gemini'] as const) {
  t.test(`cross-format: Anthropic Messages to the ${target} provider`, async (t) => {
    const { value: run, upstream } = await exchange(t, stack, { providers: [target], endpoint: 'messages' }, () =>
      runClient(t, CLAUDE, ['-p', 'Say hello', '--model', MODELS[target], '--output-format', 'json'], {
        cwd,
        home: tempFolder(t, 'claude-home'),
        env: { ANTHROPIC_BASE_URL: stack.gw.url, ANTHROPIC_API_KEY: CLIENT_KEY, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' },
      }));
    exitedOk(t, run);
    t.equal(resultOf(run.stdout)?.result, target === 'openai' ? 'Hello from the fake upstream' : 'Hello from the fake Gemini');
    t.ok(upstream.every((u) => JSON.stringify(u.body).includes('Say hello')), 'the prompt was translated for the provider');
  });
}

t.test('same format: the cache markers, beta and version headers reach Anthropic', async (t) => {
  const { value: run, upstream } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () => claude(['-p', 'Say hello', '--output-format', 'json']));
  exitedOk(t, run);
  for (const u of upstream) {
    t.ok(JSON.stringify(u.body).includes('"cache_control":{"type":"ephemeral"'), 'cache_control as Claude Code wrote it');
    t.ok('context_management' in u.body, 'context_management passed through');
    t.equal(u.body.model, 'claude-sonnet-4-5', 'only the provider prefix removed');
    t.match(String(u.headers['anthropic-beta']), /claude-code-20250219/, 'anthropic-beta as Claude Code sent it');
    t.equal(u.headers['anthropic-version'], '2023-06-01');
    t.match(String(u.headers['x-stainless-package-version']), /^\d+\.\d+\.\d+/, 'the SDK description (x-stainless-*) forwarded');
    t.equal(u.headers['x-api-key'], FAKE_ANTHROPIC_KEY, "the provider's key, not the client's");
  }
});
