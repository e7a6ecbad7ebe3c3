// Provider-reported quota, end to end: each fake upstream (OpenAI Chat, OpenAI Responses, Anthropic, Gemini) on a
// real socket sends the rate-limit headers its provider sends (docs/quota.md); after one request through the
// gateway, what each reported is in /api/quota (with source and age, beside the computed figures) and in the
// tollgate_provider_reported_* gauges. Gemini sends none of them and keeps its computed quota only.

import t from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { respProvider, startFakeResponses } from '../helpers/fake-responses.js';
import { fakeAnthropicProvider, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { geminiProvider, startFakeGemini } from '../helpers/fake-gemini.js';
import { metricValue } from '../helpers/prom.js';

const [oai, resp, anth, gem] = await Promise.all([startFakeOpenAI(t), startFakeResponses(t), startFakeAnthropic(t), startFakeGemini(t)]);
const inOneMinute = new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
oai.setResponseHeaders({
  'x-ratelimit-limit-requests': '5000', 'x-ratelimit-remaining-requests': '4999', 'x-ratelimit-reset-requests': '12ms',
  'x-ratelimit-limit-tokens': '160000', 'x-ratelimit-remaining-tokens': '16000', 'x-ratelimit-reset-tokens': '6m0s',
});
resp.setResponseHeaders({
  'x-ratelimit-limit-requests': '30000', 'x-ratelimit-remaining-requests': '29999', 'x-ratelimit-reset-requests': '2ms',
  'x-ratelimit-limit-tokens': '150000000', 'x-ratelimit-remaining-tokens': '149999000', 'x-ratelimit-reset-tokens': '0s',
});
anth.setResponseHeaders({
  'anthropic-ratelimit-requests-limit': '1000', 'anthropic-ratelimit-requests-remaining': '999', 'anthropic-ratelimit-requests-reset': inOneMinute,
  'anthropic-ratelimit-tokens-limit': '96000', 'anthropic-ratelimit-tokens-remaining': '96000', 'anthropic-ratelimit-tokens-reset': inOneMinute,
  'anthropic-ratelimit-input-tokens-limit': '80000', 'anthropic-ratelimit-input-tokens-remaining': '0', 'anthropic-ratelimit-input-tokens-reset': inOneMinute,
  'anthropic-ratelimit-output-tokens-limit': '16000', 'anthropic-ratelimit-output-tokens-remaining': '16000', 'anthropic-ratelimit-output-tokens-reset': inOneMinute,
});
// Gemini: what it really sends (no rate-limit headers at all).

const gw = await startApp(t, {
  providers: {
    oai: fakeProvider(oai.baseUrl),
    resp: respProvider(resp.baseUrl),
    anth: fakeAnthropicProvider(anth.url),
    gem: geminiProvider(gem),
  },
});

async function chat(model: string): Promise<number> {
  const res = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.body.text();
  return res.statusCode;
}

const statuses = [await chat('oai/gpt-4o'), await chat('resp/gpt-4.1'), await chat('anth/claude-haiku-4-5'), await chat('gem/gemini-2.0-flash')];

interface Reported {
  connection: string; source: string; observed_at: string; age_s: number; retry_after_s: number | null;
  limits: Record<string, { limit: number | null; remaining: number | null; percentage: number | null; reset_at: string | null; reset_in_s: number | null }>;
}
const quota = (await (await request(`${gw.url}/api/quota`)).body.json()) as { providers: { id: string; reported: Reported[]; quota: unknown; cost: unknown }[] };
const entry = (id: string) => quota.providers.find((p) => p.id === id)!;

t.test('OpenAI Chat: the x-ratelimit-* family reaches /api/quota with source and age', async (t) => {
  t.same(statuses, [200, 200, 200, 200], 'one request through each provider');
  const [r] = entry('oai').reported;
  t.match(r, { connection: 'default', source: 'headers', retry_after_s: null });
  t.ok(r!.age_s >= 0 && r!.age_s < 60);
  t.ok(Date.now() - Date.parse(r!.observed_at) < 60_000);
  t.match(r!.limits.requests, { limit: 5000, remaining: 4999, percentage: 0.02 });
  t.match(r!.limits.tokens, { limit: 160000, remaining: 16000, percentage: 90 });
  t.ok(r!.limits.tokens!.reset_in_s! > 300 && r!.limits.tokens!.reset_in_s! <= 360, 'reset 6m0s from now');
  t.ok(entry('oai').quota, 'the computed quota is still there beside it');
});

t.test('OpenAI Responses: the same family', async (t) => {
  const [r] = entry('resp').reported;
  t.match(r!.limits, { requests: { limit: 30000, remaining: 29999 }, tokens: { limit: 150000000, remaining: 149999000 } });
});

t.test('Anthropic: requests, tokens, input and output tokens, RFC 3339 resets', async (t) => {
  const [r] = entry('anth').reported;
  t.match(r!.limits, {
    requests: { limit: 1000, remaining: 999, reset_at: new Date(Date.parse(inOneMinute)).toISOString() },
    tokens: { limit: 96000, remaining: 96000, percentage: 0 },
    input_tokens: { limit: 80000, remaining: 0, percentage: 100 },
    output_tokens: { limit: 16000, remaining: 16000 },
  });
});

t.test('Gemini reports nothing: computed quota only', async (t) => {
  t.same(entry('gem').reported, []);
  t.ok(entry('gem').cost);
});

t.test('the gauges carry the same numbers; nothing for Gemini', async (t) => {
  const text = await gw.metrics();
  t.equal(metricValue(text, 'tollgate_provider_reported_limit', { provider: 'oai', connection: 'default', resource: 'tokens' }), 160000);
  t.equal(metricValue(text, 'tollgate_provider_reported_remaining', { provider: 'oai', connection: 'default', resource: 'tokens' }), 16000);
  t.equal(metricValue(text, 'tollgate_provider_reported_used_ratio', { provider: 'oai', connection: 'default', resource: 'tokens' }), 0.9);
  t.equal(metricValue(text, 'tollgate_provider_reported_remaining', { provider: 'resp', connection: 'default', resource: 'requests' }), 29999);
  t.equal(metricValue(text, 'tollgate_provider_reported_remaining', { provider: 'anth', connection: 'default', resource: 'input_tokens' }), 0);
  t.equal(metricValue(text, 'tollgate_provider_reported_limit', { provider: 'anth', connection: 'default', resource: 'output_tokens' }), 16000);
  const reset = metricValue(text, 'tollgate_provider_reported_reset_seconds', { provider: 'anth', connection: 'default', resource: 'requests' });
  t.ok(reset > 0 && reset <= 60, 'seconds until the reported reset');
  t.match(text, /tollgate_provider_reported_age_seconds\{provider="anth",connection="default"\} /);
  t.notMatch(text, /tollgate_provider_reported_\w+\{provider="gem"/, 'no series for a provider that reports nothing');
});

t.test('a quota alert fires from the reported state (Anthropic input tokens exhausted, OpenAI tokens at 90 %)', async (t) => {
  await gw.app.tollgate.alerting.alerts.check();
  const res = await request(`${gw.url}/api/alerts`);
  const body = (await res.body.json()) as { alerts: { kind: string; subject: string; threshold: number | null }[] };
  const got = body.alerts.map((a) => `${a.kind} ${a.subject} ${a.threshold}`);
  t.ok(got.includes('quota_exhausted anth/default/input_tokens 100'), 'exhausted from the reported input tokens');
  t.ok(got.includes('quota_warning oai/default/tokens 80') && got.includes('quota_warning oai/default/tokens 90'), '80 and 90 % from the reported tokens');
  t.notOk(got.some((a) => a.includes('gem/')), 'nothing for Gemini');
});
