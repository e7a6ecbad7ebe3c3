// No 5xx from client input, ever (docs/security.md): property-based fuzzing of every route of a real app on a real
// socket, open (no api_keys, loopback) and with a key, with the demo mock and a fake upstream per wire format so
// that the translated paths run too. Each answer must be below 500, every 4xx must be the one error shape
// (docs/errors.md), no request may hang past 5 s, and the gateway must still answer /health at the end.
// The seed is fixed (FUZZ_SEED, default below) so that a failure reproduces; FUZZ_RUNS scales the run counts.
// The HTTP-parser refusals (431 and 400 on the raw socket) are explicit cases at the end.

import t, { type Test } from 'tap';
import fc from 'fast-check';
import { DEMO_PROVIDER, startApp, testConfig, type TestApp } from '../helpers/app.js';
import type { Config } from '../../src/config/types.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { respProvider, startFakeResponses } from '../helpers/fake-responses.js';
import { connect } from 'node:net';
import { exchange, requestBytes, type RawAnswer, type RawRequest } from '../helpers/raw-http.js';
import { bodyCase, hostileHeaders, hostilePath, hostileQuery, pathEncode, validBody, type BodyCase, type Format } from './hostile.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_012);
const SCALE = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number): number => Math.max(1, Math.round(n * SCALE));
const KEY = 'tg-fuzz-key';

const [oa, an, gm, rs] = await Promise.all([startFakeOpenAI(t), startFakeAnthropic(t), startFakeGemini(t), startFakeResponses(t)]);
const providers = {
  demo: DEMO_PROVIDER,
  open: { ...DEMO_PROVIDER, allow_unlisted_models: true },
  oa: fakeProvider(oa.baseUrl),
  an: fakeAnthropicProvider(an.url),
  gm: geminiProvider(gm),
  rs: respProvider(rs.baseUrl),
};
const combos = { duo: { strategy: 'fallback', models: ['demo/echo-1', 'oa/gpt-4o'] } };
const raw = { providers, combos };
// One app (the embedded store allows one data directory per process); the keyed half swaps the config in.
const gw = await startApp(t, raw);
const port = Number(new URL(gw.url).port);
const openConfig = gw.holder.current;
// Hostile requests include garbage keys on purpose: the wrong-key limit (tested in test/gate) would answer 429 to the rest.
const keyedConfig = testConfig({ ...raw, server: { api_keys: [{ name: 'fuzz', key: KEY, role: 'admin' }], rate_limit: { auth_failures_per_minute: 1_000_000 } } }, openConfig.storage.data_dir);

interface Mode {
  readonly name: 'open' | 'keyed';
  readonly config: Config;
  /** What a client of this mode sends to be let in. */
  readonly auth: readonly (readonly [string, string])[];
}
const MODES: readonly Mode[] = [
  { name: 'open', config: openConfig, auth: [] },
  { name: 'keyed', config: keyedConfig, auth: [['authorization', `Bearer ${KEY}`]] },
];

/**
 * Every route the app has, read from the app itself (so that a new route is fuzzed without editing this file): the
 * labels of fastify's route tree, joined from the root down.
 */
function appRoutes(app: TestApp['app']): { method: string; url: string }[] {
  const out: { method: string; url: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes().split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (m === null) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    for (const method of m[3]?.split(', ') ?? []) if (method !== 'HEAD') out.push({ method, url: stack.join('') });
  }
  return out;
}
/** Routes whose answer never ends by design (server-sent events): fuzzed on their head, below, not to their end. */
const ENDLESS = new Set(['GET /api/live']);
const ROUTES = appRoutes(gw.app).filter((r) => !ENDLESS.has(`${r.method} ${r.url}`));

/** Write `bytes` and read until the answer's headers end (or the server closes); then hang up. */
function answerHead(port: number, bytes: Buffer, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer head within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    socket.on('data', (c: Buffer) => {
      got += c.toString('latin1');
      if (got.includes('\r\n\r\n')) finish();
    });
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(bytes);
  });
}

let cases = 0;
/** Answers by status, per property (printed with its result, to show what the generators reach). */
let statuses = new Map<number, number>();
const short = (s: string): string => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s);

/** The verdict on one answer; a string says what is wrong (fast-check prints it with the counterexample). */
interface VerdictOptions {
  /** A HEAD answer has no body. */
  readonly head?: boolean;
  /** The request reached a fake upstream, whose own 4xx the gateway relays unchanged (docs/errors.md). */
  readonly relayed?: boolean;
}

function verdict(a: RawAnswer, opts: VerdictOptions = {}): string | null {
  if (a.status === 0) return `no HTTP answer: ${short(a.body)}`;
  if (a.status >= 500) return `${a.status}: ${short(a.body)}`;
  if (a.status >= 400 && !opts.head) {
    let body: { error?: { code?: unknown; message?: unknown } };
    try {
      body = JSON.parse(a.body) as typeof body;
    } catch {
      return `${a.status} body is not JSON: ${short(a.body)}`;
    }
    const ours = typeof body.error?.code === 'string' && body.error.code.startsWith('TOLLGATE_ERR_') && typeof body.error.message === 'string';
    if (!ours && !(opts.relayed && typeof body.error === 'object' && body.error !== null)) {
      return `${a.status} body is not the error shape: ${short(a.body)}`;
    }
  }
  // A stream that began 200 must not end in an internal error either.
  if (a.headers['content-type']?.startsWith('text/event-stream') && a.body.includes('TOLLGATE_ERR_INTERNAL')) return `${a.status} with an internal error in the body: ${short(a.body)}`;
  return null;
}

/** Requests the fake upstreams have received so far. */
const upstreamCalls = (): number => oa.received.length + an.received.length + gm.received.length + rs.received.length;

async function send(r: RawRequest, opts: { head?: boolean } = {}): Promise<void> {
  cases++;
  const before = upstreamCalls();
  const a = await exchange(port, requestBytes(r));
  statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  const wrong = verdict(a, { ...opts, relayed: upstreamCalls() > before });
  if (wrong !== null) throw new Error(`${r.method} ${short(r.path)} -> ${wrong}`);
}

/** Run a property; a failure is one tap failure whose message holds the shrunk counterexample and the seed. */
async function property<T>(t: Test, seed: number, name: string, arb: fc.Arbitrary<T>, numRuns: number, run: (v: T) => Promise<void>): Promise<void> {
  const started = cases;
  statuses = new Map();
  const out = await fc.check(fc.asyncProperty(arb, run), { seed, numRuns, endOnFailure: false });
  if (out.failed) {
    const err = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
    t.fail(`${name}: ${err}\ncounterexample: ${short(fc.stringify(out.counterexample))}\nseed ${seed} (rerun with FUZZ_SEED=${SEED}), path ${out.counterexamplePath}`);
  } else {
    const seen = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ');
    t.pass(`${name}: ${out.numRuns} cases, ${cases - started} requests (${seen})`);
  }
}

const JSON_CT = ['content-type', 'application/json'] as const;
/** A body every POST route accepts (each format reads its own fields). */
const ANY_FORMAT_BODY = JSON.stringify({
  model: 'demo/echo-1', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], input: 'hi', contents: [{ parts: [{ text: 'hi' }] }],
});

function dataPlane(c: BodyCase): { path: string } {
  switch (c.format) {
    case 'chat':
      return { path: '/v1/chat/completions' };
    case 'messages':
      return { path: '/v1/messages' };
    case 'count_tokens':
      return { path: '/v1/messages/count_tokens' };
    case 'responses':
      return { path: '/v1/responses' };
    case 'gemini':
      return { path: `/v1beta/models/${pathEncode(c.model)}:${c.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}` };
  }
}

const FORMATS: readonly Format[] = ['chat', 'messages', 'count_tokens', 'responses', 'gemini'];

t.test('the app has the routes this suite expects (and fuzzes every one it has)', async (t) => {
  const seen = new Set(ROUTES.map((r) => `${r.method} ${r.url}`));
  for (const r of [
    'GET /v1/models', 'POST /v1/chat/completions', 'POST /v1/messages', 'POST /v1/messages/count_tokens', 'POST /v1/responses',
    'POST /v1beta/*', 'POST /v1/*', 'GET /', 'GET /api/usage', 'GET /api/quota', 'GET /api/alerts', 'GET /api/budgets', 'GET /health', 'GET /ready', 'GET /metrics',
  ]) {
    t.ok(seen.has(r), r);
  }
});

/** Raw bytes the HTTP parser refuses: each answer is a real HTTP/1.1 response in the error shape that closes. */
const PARSER_CASES: { name: string; bytes: string; status: number; code: string }[] = [
  { name: 'headers over 16 KiB', bytes: `GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431, code: 'TOLLGATE_ERR_HEADERS_TOO_LARGE' },
  { name: 'bad chunk size', bytes: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'invalid header name', bytes: 'GET /health HTTP/1.1\r\nhost: x\r\nx bad: 1\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'control character in a header value', bytes: 'GET /health HTTP/1.1\r\nhost: x\r\nx-bad: a\u0001b\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'bad request line', bytes: 'GARBAGE\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'unknown HTTP version', bytes: 'GET /health HTTP/9.9\r\nhost: x\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'content-length and transfer-encoding', bytes: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n{}', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'CONNECT to a host (a forward proxy\'s tunnel)', bytes: 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nhost: 127.0.0.1:443\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'CONNECT to a route', bytes: 'CONNECT /api/admin/export HTTP/1.1\r\nhost: x\r\n\r\n', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
  { name: 'non-numeric content-length', bytes: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n{}', status: 400, code: 'TOLLGATE_ERR_BAD_REQUEST' },
];

for (const [i, mode] of MODES.entries()) {
  // Each half gets its own seed, so that the keyed half does not replay the open half's cases.
  const seed = SEED + i;
  t.test(`${mode.name}: ${mode.name === 'open' ? 'no api_keys' : 'a key configured and sent'}`, async (t) => {
    gw.holder.replace(mode.config);
    const auth = mode.auth;
    for (const format of FORMATS) {
      await property(t, seed, `hostile ${format} bodies`, bodyCase(format), runs(format === 'chat' ? 250 : 150), async (c) => {
        await send({ method: 'POST', path: dataPlane(c).path, headers: [...auth, JSON_CT], body: c.body });
      });
    }

    const route = fc.constantFrom(...ROUTES);
    await property(t, seed, 'hostile headers on every route', fc.tuple(route, hostileHeaders, fc.boolean()), runs(150), async ([r, headers, withAuth]) => {
      const path = r.url.endsWith('*') ? `${r.url.slice(0, -1)}demo/echo-1:generateContent` : r.url;
      await send({ method: r.method, path, headers: [...(withAuth ? auth : []), ...headers], body: r.method === 'POST' ? ANY_FORMAT_BODY : undefined });
    });

    // An endless stream: its status line and headers must come at once, a 200 event stream or a refusal.
    await property(t, seed, 'hostile headers on /api/live', fc.tuple(hostileHeaders, fc.boolean()), runs(60), async ([headers, withAuth]) => {
      cases++;
      const head = await answerHead(port, requestBytes({ method: 'GET', path: '/api/live', headers: [...(withAuth ? auth : []), ...headers] }));
      const ok = /^HTTP\/1\.1 200 /.test(head) ? /\r\ncontent-type: text\/event-stream/i.test(head) : /^HTTP\/1\.1 4\d\d /.test(head);
      if (!ok) throw new Error(`not an event stream nor a refusal: ${short(head)}`);
    });

    const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
    await property(t, seed, 'hostile paths and methods', fc.tuple(method, hostilePath, fc.option(hostileQuery, { freq: 3 })), runs(250), async ([m, path, query]) => {
      const full = query === null ? path : `${path}?${query}`;
      const body = m === 'POST' || m === 'PUT' || m === 'PATCH' ? ANY_FORMAT_BODY : undefined;
      await send({ method: m, path: full, headers: [...auth, JSON_CT], body }, { head: m === 'HEAD' });
    });

    await property(t, seed, 'hostile query strings on every route', fc.tuple(route, hostileQuery), runs(300), async ([r, query]) => {
      const path = r.url.endsWith('*') ? `${r.url.slice(0, -1)}gm/gemini-2.5-flash:generateContent` : r.url;
      await send({ method: r.method, path: `${path}?${query}`, headers: [...auth, JSON_CT], body: r.method === 'POST' ? ANY_FORMAT_BODY : undefined });
    });

    t.test('model names that are prototype properties are unknown models, on every data-plane route', async (t) => {
      for (const model of ['__proto__/x', 'constructor/x', 'hasOwnProperty/x', 'demo/__proto__', 'oa/constructor', 'toString', 'x(', 'x(high)', 'demo/', '/x']) {
        for (const format of FORMATS) {
          const c: BodyCase = { format, model, stream: false, body: JSON.stringify(validBody(format, model)) };
          const a = await exchange(port, requestBytes({ method: 'POST', path: dataPlane(c).path, headers: [...auth, JSON_CT], body: c.body }));
          cases++;
          t.equal(verdict(a), null, `${format} ${model}: ${a.status}`);
        }
      }
      // The router decodes the path once: %25 is the model '%' (unknown), a lone '%' is a malformed URL.
      const gemini = JSON.stringify(validBody('gemini', ''));
      const pct = await exchange(port, requestBytes({ method: 'POST', path: '/v1beta/models/%25:generateContent', headers: [...auth, JSON_CT], body: gemini }));
      t.match({ status: pct.status, body: JSON.parse(pct.body) }, { status: 404, body: { error: { code: 'TOLLGATE_ERR_MODEL_NOT_FOUND' } } }, '%25: an unknown model, not a URIError');
      const bad = await exchange(port, requestBytes({ method: 'POST', path: '/v1beta/models/%:generateContent', headers: [...auth, JSON_CT], body: gemini }));
      t.match({ status: bad.status, body: JSON.parse(bad.body) }, { status: 400, body: { error: { code: 'TOLLGATE_ERR_BAD_REQUEST' } } }, 'a lone %: a bad request');
      const slash = await exchange(port, requestBytes({ method: 'POST', path: '/v1beta/models/demo%2Fecho-1:generateContent', headers: [...auth, JSON_CT], body: gemini }));
      t.equal(slash.status, 200, '%2F in the model is decoded once, to the provider separator');
    });

    // Depends on the JSON nesting limit (server.json_max_depth, written in parallel on another branch): until it is
    // merged, a 10,000-deep body may still reach code that recurses on it.
    t.test('10,000-deep JSON is refused in the error shape', async (t) => {
      const deep = `{"model":"demo/echo-1","messages":[{"role":"user","content":${'['.repeat(10_000)}${']'.repeat(10_000)}}]}`;
      for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1beta/models/gm/gemini-2.5-flash:generateContent']) {
        const a = await exchange(port, requestBytes({ method: 'POST', path, headers: [...auth, JSON_CT], body: deep }));
        cases++;
        t.equal(verdict(a), null, `${path}: ${a.status}`);
      }
    });

    t.test('HTTP-parser refusals answer in the error shape and close', async (t) => {
      for (const c of PARSER_CASES) {
        const a = await exchange(port, Buffer.from(c.bytes, 'latin1'));
        cases++;
        t.equal(a.status, c.status, `${c.name}: status`);
        t.equal(a.headers['content-type'], 'application/json', `${c.name}: content-type`);
        t.equal(a.headers.connection, 'close', `${c.name}: connection close`);
        t.match(JSON.parse(a.body || 'null'), { error: { code: c.code, message: String, type: 'invalid_request_error' } }, `${c.name}: the error shape`);
      }
    });
  });
}

t.test('the gateway still answers /health afterwards', async (t) => {
  const a = await exchange(port, requestBytes({ method: 'GET', path: '/health' }));
  t.equal(a.status, 200, '/health');
  t.comment(`${cases} requests in all (seed ${SEED})`);
});
