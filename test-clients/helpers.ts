// The real-client suite's common parts: where the installed clients are, the stack every client file runs against
// (the four fake upstreams and the gateway in this process, on 127.0.0.1), a runner for a client process with a
// clean environment and a temporary HOME, and `exchange`, which runs one client case and checks what the gateway
// recorded against what the fake upstreams received and reported.
//
// The clients are installed by scripts/install-clients.mjs (npm run test:clients does it first) into
// $TOLLGATE_CLIENTS_CACHE or .cache/clients.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { startApp, type TestApp } from '../test/helpers/app.js';
import { FAKE_USAGE, fakeAnthropicProvider, startFakeAnthropic, type AnthropicReceived, type FakeAnthropic } from '../test/helpers/fake-anthropic.js';
import { geminiProvider, startFakeGemini, DEFAULT_USAGE as GEMINI_USAGE, type FakeGemini } from '../test/helpers/fake-gemini.js';
import { fakeProvider, startFakeOpenAI, DEFAULT_USAGE as CHAT_USAGE, type FakeOpenAI } from '../test/helpers/fake-openai.js';
import { respProvider, startFakeResponses, DEFAULT_USAGE as RESPONSES_USAGE, type FakeResponses } from '../test/helpers/fake-responses.js';
import { waitFor } from '../test/helpers/wait.js';
import { runProcess } from '../test/helpers/cli.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CLIENTS_DIR = resolve(process.env.TOLLGATE_CLIENTS_CACHE ?? join(ROOT, '.cache', 'clients'));

/** An installed client's executable (node_modules/.bin); a missing one means the install step did not run. */
export function clientBin(name: string): string {
  const file = join(CLIENTS_DIR, 'node_modules', '.bin', name);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run test:clients\` (it installs the pinned clients first)`);
  return file;
}

/** The provider names of the stack, one per wire format. */
export type UpstreamName = 'anthropic' | 'openai' | 'responses' | 'gemini';

/** Models of the stack, as a client names them (`<provider>/<model>`). */
export const MODELS = {
  anthropic: 'anthropic/claude-sonnet-4-5',
  openai: 'openai/gpt-4o',
  responses: 'responses/gpt-5',
  gemini: 'gemini/gemini-2.5-flash',
} as const satisfies Record<UpstreamName, string>;

/**
 * The five buckets (input, cached, cache write, output, reasoning) the gateway must record for one answer of each
 * fake, worked out from the usage the fake reports with the mapping of docs/translation.md ("Usage").
 */
export const EXPECTED_BUCKETS: Record<UpstreamName, (number | null)[]> = {
  anthropic: [FAKE_USAGE.input_tokens, FAKE_USAGE.cache_read_input_tokens, FAKE_USAGE.cache_creation_input_tokens, FAKE_USAGE.output_tokens, null],
  openai: [
    CHAT_USAGE.prompt_tokens - (CHAT_USAGE.cached_tokens ?? 0), CHAT_USAGE.cached_tokens ?? 0, null,
    CHAT_USAGE.completion_tokens - (CHAT_USAGE.reasoning_tokens ?? 0), CHAT_USAGE.reasoning_tokens ?? 0,
  ],
  responses: [
    RESPONSES_USAGE.input_tokens - RESPONSES_USAGE.cached_tokens, RESPONSES_USAGE.cached_tokens, null,
    RESPONSES_USAGE.output_tokens - RESPONSES_USAGE.reasoning_tokens, RESPONSES_USAGE.reasoning_tokens,
  ],
  gemini: [
    GEMINI_USAGE.promptTokenCount - (GEMINI_USAGE.cachedContentTokenCount ?? 0), GEMINI_USAGE.cachedContentTokenCount ?? 0, null,
    GEMINI_USAGE.candidatesTokenCount, GEMINI_USAGE.thoughtsTokenCount ?? 0,
  ],
};

/** The key every client is given for the gateway (server.api_keys: `clients`); each sends it its own way. */
export const CLIENT_KEY = 'tollgate-client-key-2f9c41d7e8b3a605';

/** A prompt with this word makes the fakes call the stack's tool (once: after the tool result they answer text). */
export const TOOL_ROUND = 'tollgate-tool-round';

/** One request an upstream received, whichever fake it was. */
export interface Upstream {
  readonly provider: UpstreamName;
  readonly path: string;
  readonly headers: AnthropicReceived['headers'];
  readonly body: Record<string, unknown>;
}

export type Row = Record<string, unknown>;

export interface Stack {
  readonly gw: TestApp;
  readonly anthropic: FakeAnthropic;
  readonly openai: FakeOpenAI;
  readonly responses: FakeResponses;
  readonly gemini: FakeGemini;
  /** How many requests each fake has received so far. */
  seen(): Record<UpstreamName, number>;
  /** The requests each fake received after `since` (a `seen()` taken earlier). */
  upstreamSince(since: Record<UpstreamName, number>): Upstream[];
  /** The tool the fakes call on a TOOL_ROUND prompt: a name the client declares and the arguments it takes. */
  toolCall: { name: string; input: Record<string, unknown> };
}

const mentions = (v: unknown, s: string): boolean => JSON.stringify(v ?? null).includes(s);

/**
 * The four fakes and the gateway with one provider per fake (named as UpstreamName). Each fake answers text, except
 * a request that declares `stack.toolCall`'s tool and whose conversation asks for TOOL_ROUND without a tool result
 * yet: that one gets a call of `stack.toolCall`.
 */
export async function startStack(t: Test): Promise<Stack> {
  const anthropic = await startFakeAnthropic(t);
  const openai = await startFakeOpenAI(t);
  const responses = await startFakeResponses(t);
  const gemini = await startFakeGemini(t);
  // A CLI agent's prompts are long: the stall timeout of the fakes' provider rows (1 s) is for failure tests.
  const timeouts = { timeouts: { connect_s: 2, stall_s: 30 } };
  const gw = await startApp(t, {
    server: { api_keys: [{ name: 'clients', key: CLIENT_KEY }] },
    providers: {
      anthropic: fakeAnthropicProvider(anthropic.url, timeouts),
      openai: fakeProvider(openai.baseUrl, timeouts),
      responses: respProvider(responses.baseUrl, { ...timeouts, models: { 'gpt-5': { kind: 'llm', capabilities: ['tools', 'vision', 'reasoning'], thinking: 'openai' } } }),
      gemini: geminiProvider(gemini, timeouts),
    },
  });
  const stack: Stack = {
    gw, anthropic, openai, responses, gemini,
    toolCall: { name: 'unset', input: {} },
    seen: () => ({ anthropic: anthropic.received.length, openai: openai.received.length, responses: responses.received.length, gemini: gemini.received.length }),
    upstreamSince: (since) => [
      ...anthropic.received.slice(since.anthropic).map((r) => ({ provider: 'anthropic' as const, path: r.path, headers: r.headers, body: r.body })),
      ...openai.received.slice(since.openai).map((r) => ({ provider: 'openai' as const, path: r.path, headers: r.headers, body: r.body })),
      ...responses.received.slice(since.responses).map((r) => ({ provider: 'responses' as const, path: r.path, headers: r.headers, body: r.body })),
      ...gemini.received.slice(since.gemini).map((r) => ({ provider: 'gemini' as const, path: r.path, headers: r.headers, body: r.body })),
    ],
  };
  // A call only where the request declares the tool: a client's side requests (a title, a summary) ask no tools.
  const asks = (tools: unknown, history: unknown, answered: string) =>
    mentions(tools, `"${stack.toolCall.name}"`) && mentions(history, TOOL_ROUND) && !mentions(history, answered);
  anthropic.answerWith((r) => (asks(r.body.tools, r.body.messages, '"tool_result"')
    ? { kind: 'tool_use', name: stack.toolCall.name, input: stack.toolCall.input }
    : { kind: 'ok' }));
  openai.answerWith((r) => (asks(r.body.tools, r.body.messages, '"role":"tool"')
    ? { kind: 'tool', name: stack.toolCall.name, args: stack.toolCall.input }
    : { kind: 'ok' }));
  responses.answerWith((r) => (asks(r.body.tools, r.body.input, '"function_call_output"')
    ? { kind: 'tool', name: stack.toolCall.name, arguments: JSON.stringify(stack.toolCall.input) }
    : { kind: 'ok' }));
  gemini.answerWith((r) => (asks(r.body.tools, r.body.contents, '"functionResponse"')
    ? { kind: 'call', name: stack.toolCall.name, args: stack.toolCall.input }
    : { kind: 'ok' }));
  return stack;
}

/** A row's buckets: input, cached, cache write, output, reasoning (null stays null). */
export const bucketsOf = (row: Row): (number | null)[] =>
  [row.input_tokens, row.cached_tokens, row.cache_write_tokens, row.output_tokens, row.reasoning_tokens].map((v) => (v === null ? null : Number(v)));

export interface Exchange<T> {
  readonly value: T;
  /** What the fakes received during the case. */
  readonly upstream: Upstream[];
  /** The usage rows the gateway recorded during the case. */
  readonly rows: Row[];
}

/**
 * Run one client case and check the record: one usage row per upstream request (so no request failed at the
 * gateway), each a success on the provider that received it, with the buckets that provider's fake reported.
 * `expect` names the providers the case must reach (each at least once, no other).
 */
export async function exchange<T>(t: Test, stack: Stack, expect: { providers: UpstreamName[]; endpoint: string }, run: () => Promise<T>): Promise<Exchange<T>> {
  const seen = stack.seen();
  const before = new Set((await stack.gw.rows()).map((r) => String(r.request_id)));
  const value = await run();
  // Cases of one file run one after another, so what the fakes received meanwhile is this case's.
  const upstream = stack.upstreamSince(seen);
  const fresh = async () => (await stack.gw.rows()).filter((r) => !before.has(String(r.request_id)));
  await waitFor(async () => (await fresh()).length >= upstream.length, 10_000).catch(() => undefined);
  const rows = await fresh();
  t.ok(upstream.length > 0, `the upstream received the client's requests (${upstream.length})`);
  t.same([...new Set(upstream.map((u) => u.provider))].sort(), [...expect.providers].sort(), `the requests reached ${expect.providers.join(', ')}`);
  t.equal(rows.length, upstream.length, 'one usage row per upstream request');
  const byProvider = (xs: { provider: string }[]) => xs.map((x) => x.provider).sort();
  t.same(byProvider(rows.map((r) => ({ provider: String(r.provider) }))), byProvider(upstream), 'the rows name the providers that answered');
  for (const row of rows) {
    const provider = String(row.provider) as UpstreamName;
    t.equal(row.status, 'success', `row ${String(row.request_id)}: success`);
    t.equal(row.endpoint, expect.endpoint, `row ${String(row.request_id)}: the client's endpoint`);
    t.equal(row.api_key_name, 'clients', `row ${String(row.request_id)}: the client's key`);
    t.equal(row.usage_source, 'reported', `row ${String(row.request_id)}: usage as reported`);
    t.same(bucketsOf(row), EXPECTED_BUCKETS[provider], `row ${String(row.request_id)}: the tokens ${provider} reported`);
  }
  return { value, upstream, rows };
}

export interface ClientRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The variables a client process keeps from this process's environment; everything else is given per client. */
const KEPT = ['PATH', 'LANG', 'TZ', 'SYSTEMROOT'];

/**
 * Run a client to its end with a clean environment: PATH and the locale only, HOME and the XDG folders in a fresh
 * temporary directory (removed at teardown), plus `env`. No standard input. Killed after `timeoutMs` (2 minutes).
 */
export function runClient(
  t: Test,
  file: string,
  args: string[],
  opts: { cwd: string; home: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<ClientRun> {
  const env: Record<string, string> = {};
  for (const k of KEPT) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  Object.assign(env, {
    HOME: opts.home,
    XDG_CONFIG_HOME: join(opts.home, '.config'),
    XDG_CACHE_HOME: join(opts.home, '.cache'),
    XDG_DATA_HOME: join(opts.home, '.local', 'share'),
    XDG_STATE_HOME: join(opts.home, '.local', 'state'),
    NO_COLOR: '1',
    CI: '1',
    ...opts.env,
  });
  return runProcess(t, file, args, { cwd: opts.cwd, env, timeoutMs: opts.timeoutMs ?? 120_000 });
}

/** A temporary directory removed at teardown (a client's HOME, its working directory). */
export function tempFolder(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${prefix}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The JSON objects of a JSON-lines output (lines that are not JSON are skipped: banners, warnings). */
export function jsonLines(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (!s.startsWith('{')) continue;
    try {
      out.push(JSON.parse(s) as Record<string, unknown>);
    } catch {
      // not a JSON line
    }
  }
  return out;
}

/** The client exited 0; otherwise what it printed goes to the test output. */
export function exitedOk(t: Test, r: ClientRun): void {
  t.equal(r.code, 0, 'the client exits 0');
  if (r.code !== 0) t.comment(`exit ${String(r.code ?? r.signal)}\n--- stdout\n${r.stdout.slice(-3000)}\n--- stderr\n${r.stderr.slice(-3000)}`);
}
