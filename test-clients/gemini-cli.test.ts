// Gemini CLI (`gemini -p`, non-interactive) against Tollgate's Gemini routes: GOOGLE_GEMINI_BASE_URL is the
// gateway's origin, GEMINI_API_KEY the gateway key, and ~/.gemini/settings.json selects API-key auth (without it the
// CLI asks how to sign in). The model is `<provider>/<model>`, which lands in the URL:
// /v1beta/models/gemini/gemini-2.5-flash:streamGenerateContent. The CLI always streams from the upstream;
// "one-shot" is its JSON output, "streaming" its stream-json events.

import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENT_KEY, MODELS, TOOL_ROUND, clientBin, exchange, exitedOk, jsonLines, runClient, startStack, tempFolder, type Stack } from './helpers.js';

const GEMINI = clientBin('gemini');
const stack: Stack = await startStack(t);
const cwd = tempFolder(t, 'gemini-cwd');

/** A HOME whose ~/.gemini/settings.json is the one docs/clients.md shows. */
function geminiHome(): string {
  const home = tempFolder(t, 'gemini-home');
  mkdirSync(join(home, '.gemini'));
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
  }, null, 2));
  return home;
}

function gemini(args: string[], model: string = MODELS.gemini) {
  return runClient(t, GEMINI, ['-m', model, ...args], {
    cwd,
    home: geminiHome(),
    // GEMINI_CLI_NO_RELAUNCH: one process, not a launcher and a child with a bigger heap (half the start-up cost,
    // and nothing left running if the launcher is killed at the time limit).
    env: { GOOGLE_GEMINI_BASE_URL: stack.gw.url, GEMINI_API_KEY: CLIENT_KEY, GEMINI_CLI_TRUST_WORKSPACE: 'true', GEMINI_CLI_NO_RELAUNCH: 'true' },
  });
}

/** The text deltas of stream-json output, in order. */
const deltas = (stdout: string) => jsonLines(stdout).filter((e) => e.type === 'message' && e.role === 'assistant').map((e) => String(e.content));

t.test('one-shot: gemini -p --output-format json', async (t) => {
  const { value: run, rows } = await exchange(t, stack, { providers: ['gemini'], endpoint: 'generate_content' }, () => gemini(['-p', 'Say hello', '--output-format', 'json']));
  exitedOk(t, run);
  const out = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { response?: string; stats?: { models?: Record<string, { tokens?: unknown }> } };
  t.equal(out.response, 'Hello from the fake Gemini', 'the answer reached the client');
  t.match(out.stats?.models?.['gemini-2.5-flash']?.tokens, { prompt: 30, candidates: 8, cached: 12, thoughts: 6, total: 44 }, 'the client saw the upstream usage');
  t.same(rows.map((r) => r.stream), [true], 'the CLI streams from the upstream');
});

t.test('streaming: gemini -p --output-format stream-json', async (t) => {
  const { value: run } = await exchange(t, stack, { providers: ['gemini'], endpoint: 'generate_content' }, () => gemini(['-p', 'Say hello', '--output-format', 'stream-json']));
  exitedOk(t, run);
  t.same(deltas(run.stdout), ['Hello', ' from', ' the', ' fake', ' Gemini'], 'the text deltas arrived one by one');
});

t.test('tool round: the model calls read_file, the CLI runs it and sends the result back', async (t) => {
  const file = join(cwd, 'note.txt');
  writeFileSync(file, 'tollgate-note-a9e2\n');
  stack.toolCall = { name: 'read_file', input: { file_path: file } };
  const { value: run, upstream } = await exchange(t, stack, { providers: ['gemini'], endpoint: 'generate_content' }, () => gemini(['-p', `${TOOL_ROUND}: read note.txt`, '--output-format', 'stream-json']));
  exitedOk(t, run);
  const result = jsonLines(run.stdout).find((e) => e.type === 'tool_result');
  t.match(result, { status: 'success' }, 'the CLI ran the tool');
  t.equal(upstream.length, 2, 'two model calls: the tool call, then the answer');
  const contents = JSON.stringify(upstream.at(-1)!.body.contents);
  t.ok(contents.includes('"functionResponse"') && contents.includes('tollgate-note-a9e2'), 'the second request carries the file the tool read');
  t.equal(deltas(run.stdout).join(''), 'Hello from the fake Gemini');
});

t.test('cross-format: Gemini to the anthropic provider, with a tool round', async (t) => {
  const file = join(cwd, 'cross.txt');
  writeFileSync(file, 'tollgate-cross-60bf\n');
  stack.toolCall = { name: 'read_file', input: { file_path: file } };
  const { value: run, upstream } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'generate_content' }, () =>
    gemini(['-p', `${TOOL_ROUND}: read cross.txt`, '--output-format', 'stream-json'], MODELS.anthropic));
  exitedOk(t, run);
  t.equal(upstream.length, 2, 'the tool call, then the answer');
  const messages = JSON.stringify(upstream.at(-1)!.body.messages);
  t.ok(messages.includes('"tool_result"') && messages.includes('tollgate-cross-60bf'), 'the tool result reached Anthropic in its own format');
  t.equal(deltas(run.stdout).join('').endsWith('Hello from the fake Claude'), true, 'the answer came back as Gemini chunks');
});

t.test('same format: the SDK header and the request fields reach Gemini', async (t) => {
  const { value: run, upstream } = await exchange(t, stack, { providers: ['gemini'], endpoint: 'generate_content' }, () => gemini(['-p', 'Say hello', '--output-format', 'json']));
  exitedOk(t, run);
  for (const u of upstream) {
    t.equal(u.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', 'the model in the URL, prefix removed, alt kept');
    t.match(String(u.headers['x-goog-api-client']), /google-genai-sdk\//, 'x-goog-api-client as the CLI sent it');
    t.equal(u.headers['x-goog-api-key'], stack.gemini.key, "the provider's key, not the client's");
    t.ok(u.body.systemInstruction !== undefined && Array.isArray(u.body.tools), 'systemInstruction and tools passed through');
    t.match(u.body.generationConfig, { thinkingConfig: { includeThoughts: true } }, 'generationConfig as the CLI wrote it');
  }
});
