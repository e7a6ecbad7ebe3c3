// opencode (`opencode run`, non-interactive) against Tollgate's /v1/messages, through a provider that opencode.json
// defines with the bundled @ai-sdk/anthropic package: baseURL the gateway's /v1, apiKey the gateway key, the models
// named `<provider>/<model>` (so opencode's model id is `tollgate/<provider>/<model>`).
//
// Offline: the bundled provider package needs no download; OPENCODE_DISABLE_MODELS_FETCH=1 keeps it from fetching the
// models.dev catalogue. It still looks two packages up on the npm registry at start-up (@opencode-ai/plugin,
// @opentui/core) and works without them, so npm_config_registry points at a closed loopback port: nothing leaves the
// machine. opencode streams from the upstream; "one-shot" is its plain output, "streaming" its --format json events.
// Besides the answer, it asks the model for a session title (a request without tools): two requests per run.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_ANTHROPIC_KEY } from '../test/helpers/fake-anthropic.js';
import { freePort } from '../test/helpers/net.js';
import { CLIENT_KEY, MODELS, TOOL_ROUND, clientBin, exchange, exitedOk, jsonLines, runClient, startStack, tempFolder, type Stack } from './helpers.js';

const OPENCODE = clientBin('opencode');
const stack: Stack = await startStack(t);
const cwd = tempFolder(t, 'opencode-cwd');
const closedPort = await freePort();

// The project's opencode.json: the block docs/clients.md shows.
writeFileSync(join(cwd, 'opencode.json'), JSON.stringify({
  $schema: 'https://opencode.ai/config.json',
  autoupdate: false,
  share: 'disabled',
  provider: {
    tollgate: {
      npm: '@ai-sdk/anthropic',
      name: 'Tollgate',
      options: { baseURL: `${stack.gw.url}/v1`, apiKey: CLIENT_KEY },
      models: { [MODELS.anthropic]: { name: 'Claude Sonnet 4.5 via Tollgate' }, [MODELS.gemini]: { name: 'Gemini 2.5 Flash via Tollgate' } },
    },
  },
  model: `tollgate/${MODELS.anthropic}`,
}, null, 2));

function opencode(args: string[]) {
  return runClient(t, OPENCODE, ['run', ...args], {
    cwd,
    home: tempFolder(t, 'opencode-home'),
    env: {
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_SHARE: '1',
      npm_config_registry: `http://127.0.0.1:${closedPort}/`,
    },
  });
}

/** The text parts of --format json events, in order. */
const texts = (stdout: string) => jsonLines(stdout).filter((e) => e.type === 'text').map((e) => (e.part as { text: string }).text);

t.test('one-shot: opencode run prints the answer', async (t) => {
  const { value: run, rows } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () => opencode(['Say hello']));
  exitedOk(t, run);
  t.equal(run.stdout.trim(), 'Hello from the fake Claude', 'the answer is what opencode prints');
  t.ok(rows.every((r) => r.stream === true), 'opencode streams from the upstream');
});

t.test('streaming: opencode run --format json events', async (t) => {
  const { value: run } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () => opencode(['--format', 'json', 'Say hello']));
  exitedOk(t, run);
  t.same(texts(run.stdout), ['Hello from the fake Claude']);
  const finish = jsonLines(run.stdout).find((e) => e.type === 'step_finish') as { part?: { tokens?: unknown } } | undefined;
  t.match(finish?.part?.tokens, { input: 20, output: 9, cache: { write: 7, read: 5 } }, 'the client saw the upstream usage');
});

t.test('tool round: the model calls read, opencode runs it and sends the result back', async (t) => {
  const file = join(cwd, 'note.txt');
  writeFileSync(file, 'tollgate-note-c41d\n');
  stack.toolCall = { name: 'read', input: { filePath: file } };
  const { value: run, upstream } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () => opencode(['--format', 'json', `${TOOL_ROUND}: read note.txt`]));
  exitedOk(t, run);
  const tool = jsonLines(run.stdout).find((e) => e.type === 'tool_use') as { part?: { tool?: string; state?: { status?: string } } } | undefined;
  t.match(tool?.part, { tool: 'read', state: { status: 'completed' } }, 'opencode ran the tool');
  const withResult = upstream.filter((u) => JSON.stringify(u.body.messages).includes('"tool_result"'));
  t.equal(withResult.length, 1, 'one request carries the tool result');
  t.ok(JSON.stringify(withResult[0]?.body.messages).includes('tollgate-note-c41d'), 'with the file the tool read');
  t.equal(texts(run.stdout).at(-1), 'Hello from the fake Claude');
});

t.test('cross-format: Anthropic Messages (@ai-sdk/anthropic) to the gemini provider', async (t) => {
  const { value: run } = await exchange(t, stack, { providers: ['gemini'], endpoint: 'messages' }, () => opencode(['-m', `tollgate/${MODELS.gemini}`, 'Say hello']));
  exitedOk(t, run);
  t.equal(run.stdout.trim(), 'Hello from the fake Gemini');
});

t.test('same format: cache_control and the version header reach Anthropic', async (t) => {
  const { value: run, upstream } = await exchange(t, stack, { providers: ['anthropic'], endpoint: 'messages' }, () => opencode(['Say hello']));
  exitedOk(t, run);
  for (const u of upstream) {
    t.ok(JSON.stringify(u.body).includes('"cache_control":{"type":"ephemeral"}'), 'cache_control as opencode wrote it');
    t.equal(u.body.model, 'claude-sonnet-4-5', 'only the provider prefix removed');
    t.equal(u.headers['anthropic-version'], '2023-06-01');
    t.equal(u.headers['x-api-key'], FAKE_ANTHROPIC_KEY, "the provider's key, not the client's");
  }
  const answer = upstream.find((u) => Array.isArray(u.body.tools));
  t.match(String(answer?.headers['anthropic-beta']), /structured-outputs-2025-11-13/, 'anthropic-beta as opencode sent it with its tools');
});
