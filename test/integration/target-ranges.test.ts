// Values valid in the client's format but out of the target's range (docs/translation.md, "Fitted to the target's
// range"): a temperature above 1 to an Anthropic provider (its range is 0..1, OpenAI's and Gemini's 0..2) is sent as
// 1; more stop sequences than the target takes (OpenAI's own API 4, Gemini 5) is a 400 naming the client's parameter
// and the limit, nothing sent (dropping some would change where the answer ends). Another OpenAI-format vendor (DeepSeek
// takes 16) gets them as sent.

import t from 'tap';
import { startApp } from '../helpers/app.js';
import { fakeProvider, startFakeAnyFormat } from '../helpers/fake-any-format.js';

type Json = Record<string, unknown>;

const up = await startFakeAnyFormat(t);
const gw = await startApp(t, {
  providers: {
    oai: fakeProvider(up.port, 'ok', 'openai'), ant: fakeProvider(up.port, 'ok', 'anthropic'), gem: fakeProvider(up.port, 'ok', 'gemini'),
    // OpenAI's own API: its documented limits apply (a refused request makes no call, so nothing leaves the machine)
    openai: { ...fakeProvider(up.port, 'ok', 'openai'), base_url: 'https://api.openai.com/v1' },
  },
});

async function post(path: string, body: unknown): Promise<{ status: number; dropped: string | null; json: Json }> {
  const r = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, dropped: r.headers.get('x-tollgate-dropped-params'), json: (await r.json()) as Json };
}
const sent = (): Json => JSON.parse(up.sent.received) as Json;
const user = [{ role: 'user', content: 'x' }];
const gemini = (model: string) => `/v1beta/models/${model}:generateContent`;

t.test('temperature above 1 to Anthropic is sent as 1, from every client format', async (t) => {
  for (const [label, path, body] of [
    ['chat 1.7', '/v1/chat/completions', { model: 'ant/m', temperature: 1.7, messages: user }],
    ['gemini 1.8', gemini('ant/m'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { temperature: 1.8 } }],
    ['responses 1.5', '/v1/responses', { model: 'ant/m', temperature: 1.5, input: 'x' }],
    ['chat 2', '/v1/chat/completions', { model: 'ant/m', temperature: 2, messages: user }],
  ] as const) {
    const r = await post(path, body);
    t.equal(r.status, 200, label);
    t.equal(sent().temperature, 1, `${label}: the upstream got temperature 1`);
    t.equal(r.dropped, null, `${label}: nothing dropped`);
  }
  await post('/v1/chat/completions', { model: 'ant/m', temperature: 0.7, messages: user });
  t.equal(sent().temperature, 0.7, 'a temperature within 0..1 goes as asked');
  await post('/v1/messages', { model: 'oai/m', max_tokens: 50, temperature: 1, messages: user });
  await post(gemini('oai/m'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { temperature: 1.8 } });
  t.equal(sent().temperature, 1.8, 'an OpenAI target takes up to 2: carried as is');
});

t.test('more stop sequences than the target takes: 400 naming the parameter and the limit, nothing sent', async (t) => {
  const six = ['a', 'b', 'c', 'd', 'e', 'f'];
  for (const [label, path, body, param, limit] of [
    ['anthropic 5 -> openai', '/v1/messages', { model: 'openai/m', max_tokens: 50, stop_sequences: six.slice(0, 5), messages: user }, 'stop_sequences', 'an OpenAI Chat provider takes at most 4'],
    ['anthropic 6 -> gemini', '/v1/messages', { model: 'gem/m', max_tokens: 50, stop_sequences: six, messages: user }, 'stop_sequences', 'a Gemini provider takes at most 5'],
    ['gemini 5 -> openai', gemini('openai/m'), { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { stopSequences: six.slice(0, 5) } }, 'generationConfig.stopSequences', 'at most 4'],
  ] as const) {
    const before = up.sent.requests;
    const r = await post(path, body);
    t.equal(r.status, 400, label);
    t.match(r.json, { error: { code: 'TOLLGATE_ERR_NOT_SUPPORTED', param } }, `${label}: the client's parameter`);
    t.match(String((r.json.error as Json).message), limit, `${label}: the limit`);
    t.equal(up.sent.requests, before, `${label}: no upstream call`);
  }
  const row = (await gw.rows("kind = 'request'")).at(-1)!;
  t.same([row.status, Number(row.http_status), row.error_type], ['failure', 400, 'TOLLGATE_ERR_NOT_SUPPORTED'], 'recorded as a refused request');

  for (const [label, path, body, field, want] of [
    ['anthropic 4 -> openai', '/v1/messages', { model: 'oai/m', max_tokens: 50, stop_sequences: six.slice(0, 4), messages: user }, 'stop', six.slice(0, 4)],
    ['anthropic 5 -> gemini', '/v1/messages', { model: 'gem/m', max_tokens: 50, stop_sequences: six.slice(0, 5), messages: user }, 'generationConfig', { stopSequences: six.slice(0, 5), maxOutputTokens: 50 }],
    ['anthropic 6 -> another OpenAI-format vendor (its own limit)', '/v1/messages', { model: 'oai/m', max_tokens: 50, stop_sequences: six, messages: user }, 'stop', six],
    ['chat 4 -> anthropic (no documented limit)', '/v1/chat/completions', { model: 'ant/m', stop: six.slice(0, 4), messages: user }, 'stop_sequences', six.slice(0, 4)],
  ] as const) {
    const r = await post(path, body);
    t.equal(r.status, 200, label);
    t.same(sent()[field], want, `${label}: carried`);
  }
});
