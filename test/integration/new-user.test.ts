// As a new user would: the built CLI serves the shipped config.yaml with no secrets, the `openai` client gets a
// completion from the demo model, /api/usage and /metrics count it, spans reach an OTLP/HTTP receiver, and after a
// restart the usage is still there. The process is real (node dist/main.js), on 127.0.0.1, stopped by the test.

import t from 'tap';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { request } from 'undici';
import { tempDir } from '../helpers/tmp.js';
import { spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';
import { metricValue } from '../helpers/prom.js';
import { otlpReceiver } from '../helpers/otlp.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** The built CLI, as a user starts it; its combined output is what a user would see in the log. */
function startGateway(args: string[], cwd: string, env: Record<string, string>) {
  const p = spawnCli(t, args, { cwd, env });
  return { child: p.child, exited: p.exited.then((e) => e.code), output: () => p.out.stdout + p.out.stderr };
}

async function healthy(base: string): Promise<void> {
  await waitFor(async () => {
    try {
      const r = await request(`${base}/health`);
      await r.body.dump();
      return r.statusCode === 200;
    } catch {
      return false;
    }
  }, 20_000);
}

t.test('the shipped config.yaml serves the demo model with no secrets, and usage survives a restart', async (t) => {
  const dir = tempDir(t);
  const otlp = await otlpReceiver(t);
  const up = await startFakeOpenAI(t);
  // The shipped file plus telemetry and an OpenAI-compatible upstream declared in YAML.
  const shipped = readFileSync(join(ROOT, 'config.yaml'), 'utf8');
  copyFileSync(join(ROOT, 'config.yaml'), join(dir, 'shipped.yaml'));
  const extra = `\n  compat:\n    name: Compatible\n    group: paid\n    format: openai\n    base_url: ${up.baseUrl}\n    auth: { type: api_key, key: "\${COMPAT_KEY}" }\n    price: { input: 2.5, output: 10, cached: 1.25 }\n    models:\n      gpt-4o: { kind: llm }\n`;
  const withTelemetry = shipped.replace('otlp_endpoint: ""', `otlp_endpoint: "${otlp.url}"`) + extra;
  t.not(withTelemetry, shipped + extra, 'telemetry endpoint substituted');
  writeFileSync(join(dir, 'config.yaml'), withTelemetry);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let gw = startGateway([], dir, { PORT: String(port), COMPAT_KEY: 'sk-compat' });
  await healthy(base);

  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 });
  const res = await client.chat.completions.create({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hello, demo!' }] });
  t.match(res.choices[0]?.message.content, /^Tollgate demo reply:/);
  t.same(res.usage && { p: res.usage.prompt_tokens, c: res.usage.completion_tokens }, { p: 3, c: 12 }, 'deterministic usage: ceil(12 chars / 4) in, 12 chunks out');

  let streamed = '';
  for await (const c of await client.chat.completions.create({ model: 'demo/echo-1', stream: true, messages: [{ role: 'user', content: 'hello, demo!' }] })) {
    streamed += c.choices[0]?.delta?.content ?? '';
  }
  t.equal(streamed, res.choices[0]?.message.content, 'streamed text equals the unary text');

  const compat = await client.chat.completions.create({ model: 'compat/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(compat.choices[0]?.message.content, 'Hello from the fake upstream');
  let compatStreamed = '';
  for await (const c of await client.chat.completions.create({ model: 'compat/gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] })) {
    compatStreamed += c.choices[0]?.delta?.content ?? '';
  }
  t.equal(compatStreamed, 'Hello from the fake upstream');
  t.equal(up.received[0]?.headers.authorization, 'Bearer sk-compat', 'key resolved from ${COMPAT_KEY}');

  // demo: price input 1, output 2 per 1M; 2 requests x (3 in + 12 out). compat: 2 x (8 in + 3 cached + 5 out + 2 reasoning).
  const demoCost = 2 * (3 * 1 + 12 * 2) / 1e6;
  const compatCost = 2 * (8 * 2.5 + 3 * 1.25 + 5 * 10 + 2 * 10) / 1e6;
  const expectUsage = { requests: 4, tokens: 2 * 15 + 2 * 18 };
  type Usage = { summary: { requests: number; tokens: number; cost: number }; byModel: { model: string; tokens: number }[] };
  let usage: Usage | undefined;
  await waitFor(async () => {
    const r = await request(`${base}/api/usage?period=today`);
    usage = (await r.body.json()) as Usage;
    return usage.summary.requests === 4;
  });
  t.match(usage!.summary, expectUsage);
  t.ok(Math.abs(usage!.summary.cost - (demoCost + compatCost)) < 1e-12, `cost ${usage!.summary.cost}`);
  t.same(usage!.byModel.map((m) => [m.model, m.tokens]), [['compat/gpt-4o', 36], ['demo/echo-1', 30]]);

  const metrics = await (await request(`${base}/metrics`)).body.text();
  t.equal(metricValue(metrics, 'tollgate_requests_total', { provider: 'demo', model: 'demo/echo-1', status: 'success' }), 2);
  t.equal(metricValue(metrics, 'tollgate_tokens_total', { provider: 'demo', type: 'output' }), 24);
  t.ok(Math.abs(metricValue(metrics, 'tollgate_cost_usd_total', { provider: 'demo' }) - demoCost) < 1e-12);
  t.match(metrics, /process_cpu_user_seconds_total/, 'process metrics exported');
  t.match(metrics, /gen_ai_client_token_usage_bucket\{le="67108864"/, 'semconv buckets');

  // Clean stop: exit 0, spans flushed to the OTLP receiver.
  gw.child.kill('SIGTERM');
  t.equal(await gw.exited, 0, 'SIGTERM stops cleanly');
  t.ok(otlp.spans.some((sp) => sp.name === 'chat demo/echo-1'), 'spans exported over OTLP/HTTP');
  t.ok(otlp.spans.some((sp) => sp.attributes.some((a) => a.key === 'gen_ai.usage.input_tokens')), 'with the usage attributes');

  // Restart on the same data directory: the usage is still there.
  gw = startGateway([], dir, { PORT: String(port), COMPAT_KEY: 'sk-compat' });
  await healthy(base);
  const after = (await (await request(`${base}/api/usage?period=today`)).body.json()) as Usage;
  t.match(after.summary, expectUsage, 'usage persisted across the restart');
  gw.child.kill('SIGTERM');
  t.equal(await gw.exited, 0);
  t.notMatch(gw.output(), /sk-compat/, 'the upstream key never reaches the log');
});

t.test('the untouched shipped config.yaml starts with no environment at all', async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const gw = startGateway(['--config', join(ROOT, 'config.yaml')], dir, { PORT: String(port) });
  await healthy(`http://127.0.0.1:${port}`);
  // /health answers as soon as the server listens; the embedded store opens in the background, then /ready is 200.
  let status = 0;
  await waitFor(async () => {
    const r = await request(`http://127.0.0.1:${port}/ready`);
    await r.body.dump();
    status = r.statusCode;
    return status === 200;
  }, 20_000);
  t.equal(status, 200, 'embedded store ready');
  gw.child.kill('SIGTERM');
  t.equal(await gw.exited, 0);
  t.match(gw.output(), /serving without authentication/, 'the no-keys warning is logged');
});
