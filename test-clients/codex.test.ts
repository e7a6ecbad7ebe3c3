// Codex (`codex exec`, non-interactive) against Tollgate's /v1/responses: a custom model provider in CODEX_HOME's
// config.toml with base_url the gateway's /v1, wire_api "responses" and the key in an environment variable. Codex
// always streams from the upstream; "one-shot" is its plain output (the last message on stdout), "streaming" its
// --json event lines.

import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UPSTREAM_KEY } from '../test/helpers/fake-responses.js';
import { CLIENT_KEY, MODELS, TOOL_ROUND, clientBin, exchange, exitedOk, jsonLines, runClient, startStack, tempFolder, type Stack } from './helpers.js';

const CODEX = clientBin('codex');
const stack: Stack = await startStack(t);
const cwd = tempFolder(t, 'codex-cwd');

/** A CODEX_HOME whose config.toml points Codex at the gateway (the block docs/clients.md shows). */
function codexHome(): string {
  const home = tempFolder(t, 'codex-home');
  // No update check, no analytics, no plugin catalog: without these three Codex looks up api.github.com, chatgpt.com
  // and ab.chatgpt.com at start-up. The model calls are then its only traffic.
  writeFileSync(join(home, 'config.toml'), `model = "${MODELS.responses}"
model_provider = "tollgate"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.tollgate]
name = "Tollgate"
base_url = "${stack.gw.url}/v1"
env_key = "TOLLGATE_API_KEY"
wire_api = "responses"
`);
  return home;
}

function codex(args: string[]) {
  const home = codexHome();
  return runClient(t, CODEX, ['exec', '--skip-git-repo-check', ...args], { cwd, home, env: { CODEX_HOME: home, TOLLGATE_API_KEY: CLIENT_KEY } });
}

const agentMessages = (stdout: string) =>
  jsonLines(stdout).filter((e) => e.type === 'item.completed' && (e.item as { type?: string }).type === 'agent_message').map((e) => (e.item as { text: string }).text);

t.test('one-shot: codex exec prints the answer', async (t) => {
  const { value: run, rows } = await exchange(t, stack, { providers: ['responses'], endpoint: 'responses' }, () => codex(['Say hello']));
  exitedOk(t, run);
  t.equal(run.stdout.trim(), 'Hello from the Responses fake', 'the answer is what Codex prints');
  t.same(rows.map((r) => r.stream), [true], 'Codex streams from the upstream');
});

t.test('streaming: codex exec --json events', async (t) => {
  const { value: run } = await exchange(t, stack, { providers: ['responses'], endpoint: 'responses' }, () => codex(['--json', 'Say hello']));
  exitedOk(t, run);
  const events = jsonLines(run.stdout);
  t.same(agentMessages(run.stdout), ['Hello from the Responses fake']);
  const done = events.find((e) => e.type === 'turn.completed') as { usage?: Record<string, number> } | undefined;
  t.match(done?.usage, { input_tokens: 40, cached_input_tokens: 16, output_tokens: 25, reasoning_output_tokens: 10 }, 'the client saw the upstream usage');
});

t.test('tool round: the model calls exec_command, Codex runs it and sends the output back', async (t) => {
  stack.toolCall = { name: 'exec_command', input: { cmd: 'echo tollgate-shell-5b1e' } };
  const { value: run, upstream } = await exchange(t, stack, { providers: ['responses'], endpoint: 'responses' }, () => codex(['--json', `${TOOL_ROUND}: run it`]));
  exitedOk(t, run);
  const command = jsonLines(run.stdout).find((e) => e.type === 'item.completed' && (e.item as { type?: string }).type === 'command_execution');
  t.match(command?.item, { exit_code: 0, aggregated_output: 'tollgate-shell-5b1e\n' }, 'Codex ran the command');
  t.equal(upstream.length, 2, 'two model calls: the tool call, then the answer');
  const input = JSON.stringify(upstream.at(-1)!.body.input);
  t.ok(input.includes('"type":"function_call_output"') && input.includes('tollgate-shell-5b1e'), 'the second request carries the command output');
  t.same(agentMessages(run.stdout), ['Hello from the Responses fake']);
});

for (const target of ['anthropic', 'gemini'] as const) {
  t.test(`cross-format: OpenAI Responses to the ${target} provider, with a tool round`, async (t) => {
    stack.toolCall = { name: 'exec_command', input: { cmd: 'echo tollgate-cross-9d2c' } };
    const { value: run, upstream } = await exchange(t, stack, { providers: [target], endpoint: 'responses' }, () => codex(['--json', '-m', MODELS[target], `${TOOL_ROUND}: run it`]));
    exitedOk(t, run);
    t.equal(upstream.length, 2, 'the tool call, then the answer');
    t.ok(JSON.stringify(upstream.at(-1)!.body).includes('tollgate-cross-9d2c'), "the command output reached the provider in its own format");
    t.equal(agentMessages(run.stdout).at(-1), target === 'anthropic' ? 'Hello from the fake Claude' : 'Hello from the fake Gemini', 'the answer came back as Responses events');
  });
}

t.test('same format: prompt_cache_key, include, store and client_metadata reach the Responses upstream', async (t) => {
  const { value: run, upstream } = await exchange(t, stack, { providers: ['responses'], endpoint: 'responses' }, () => codex(['--json', 'Say hello']));
  exitedOk(t, run);
  const thread = jsonLines(run.stdout).find((e) => e.type === 'thread.started') as { thread_id?: string } | undefined;
  t.type(thread?.thread_id, 'string');
  for (const u of upstream) {
    t.equal(u.body.prompt_cache_key, thread?.thread_id, "Codex's cache key (its thread id) as Codex sent it");
    t.same(u.body.include, ['reasoning.encrypted_content']);
    t.equal(u.body.store, false);
    t.match(u.body.client_metadata, { session_id: thread?.thread_id }, 'client_metadata passed through');
    t.equal(u.body.model, 'gpt-5', 'only the provider prefix removed');
    t.equal(u.headers.authorization, `Bearer ${UPSTREAM_KEY}`, "the provider's key, not the client's");
  }
});
