// Audio tokens bill at their own rates: OpenAI's gpt-4o-audio-preview $40 / $80 per 1M audio tokens in and out
// against $2.50 / $10 for text; Gemini 2.5 Flash $1.00 per 1M audio input tokens against $0.30. Priced as text, an
// audio answer was recorded at an eighth of its bill. OpenAI Chat reports them as `*_tokens_details.audio_tokens`,
// Gemini by modality (`promptTokensDetails`, `cacheTokensDetails`, `candidatesTokensDetails`). Here: the parse (parts
// of input and output, never more than their whole, merged in streams), the price (input_audio / output_audio, their
// defaults, tiers), and requests through the gateway, passthrough, streamed and translated, recorded with the audio
// parts and the cost worked out by hand: the row, the span and the request log.

import t from 'tap';
import { openaiUsage } from '../../src/wire/openai/usage.js';
import { renderUsage } from '../../src/wire/openai/chat-response.js';
import { countsUsage, geminiCounts, geminiUsage, laterCounts } from '../../src/wire/gemini/usage.js';
import { computeCost, listCostPico } from '../../src/ledger/cost.js';
import { addUsage, totalTokens, type Usage } from '../../src/ledger/types.js';
import type { Price, ProviderConfig } from '../../src/config/types.js';
import { catalogPrice } from '../../src/config/catalog-prices.js';
import { answerJson as json, answerSse as sse, geminiCandidate as cand, listenLoopback, readJson as read } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';

const AUDIO_PREVIEW: Price = { input: 2.5, output: 10, input_audio: 40, output_audio: 80 };

// OpenAI: 1,200 prompt tokens of which 1,000 audio and 100 cached; 600 completion tokens of which 500 audio.
const OPENAI_USAGE = {
  prompt_tokens: 1200, completion_tokens: 600, total_tokens: 1800,
  prompt_tokens_details: { cached_tokens: 100, audio_tokens: 1000 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 500, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
// Gemini: 1,000 prompt tokens (600 audio), 400 of them cached (300 audio); 200 candidates (50 audio), 100 thoughts.
const GEMINI_USAGE = {
  promptTokenCount: 1000, cachedContentTokenCount: 400, candidatesTokenCount: 200, thoughtsTokenCount: 100, totalTokenCount: 1300,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: 400 }, { modality: 'AUDIO', tokenCount: 600 }],
  cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 100 }, { modality: 'AUDIO', tokenCount: 300 }],
  candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 150 }, { modality: 'AUDIO', tokenCount: 50 }],
};

t.test('OpenAI Chat: the audio parts of input and output, bounded by their whole', async (t) => {
  const u = openaiUsage(OPENAI_USAGE)!;
  t.strictSame(u, { input: 1100, cached: 100, cacheWrite: null, output: 600, reasoning: 0, audioInput: 1000, audioOutput: 500 });
  t.equal(totalTokens(u), 1800, 'parts, not buckets: the total does not count them again');
  const zero = openaiUsage({ ...OPENAI_USAGE, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { audio_tokens: 0 } })!;
  t.notOk('audioInput' in zero || 'audioOutput' in zero, 'audio_tokens 0 (every text answer): none kept');
  const over = openaiUsage({ prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 40, audio_tokens: 500 }, completion_tokens_details: { audio_tokens: 99 } })!;
  t.equal(over.audioInput, 60, 'more audio than the uncached input: the uncached input (the rest is cached)');
  t.equal(over.audioOutput, 10, 'more audio than the output: the output');
  t.equal(openaiUsage({ prompt_tokens: 10, completion_tokens: 10, prompt_tokens_details: { audio_tokens: -5 } })!.audioInput, undefined, 'a bad count is not a count');

  t.strictSame(renderUsage(u), {
    prompt_tokens: 1200, completion_tokens: 600, total_tokens: 1800,
    prompt_tokens_details: { cached_tokens: 100, audio_tokens: 1000 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 500 },
  }, 'rendered back as the API reports it');
  t.strictSame(openaiUsage(renderUsage(u)), u, 'render -> parse is the identity');
  const noCache: Usage = { input: 50, cached: null, cacheWrite: null, output: 20, reasoning: null, audioInput: 30, audioOutput: 5 };
  t.strictSame(renderUsage(noCache).prompt_tokens_details, { audio_tokens: 30 }, 'no cached count invented');
  t.strictSame(openaiUsage(renderUsage(noCache)), noCache);
  t.notOk('prompt_tokens_details' in renderUsage({ input: 5, cached: null, cacheWrite: null, output: 5, reasoning: null }), 'no audio: no details, as before');
});

t.test('Gemini: AUDIO by modality, cached audio stays cached, the larger of a stream kept count by count', async (t) => {
  const u = geminiUsage(GEMINI_USAGE)!;
  t.strictSame(u, { input: 600, cached: 400, cacheWrite: null, output: 200, reasoning: 100, audioInput: 300, audioOutput: 50 });
  t.notOk('audioInput' in geminiUsage({ promptTokenCount: 10, candidatesTokenCount: 2, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 10 }] })!, 'text only: none');
  t.equal(geminiUsage({ ...GEMINI_USAGE, cacheTokensDetails: undefined })!.audioInput, 600, 'no cache breakdown: all the audio uncached (as much as the input holds)');
  t.equal(geminiUsage({ ...GEMINI_USAGE, promptTokensDetails: [{ modality: 'AUDIO', tokenCount: 5000 }], cacheTokensDetails: undefined })!.audioInput, 600, 'never past the input');
  t.equal(geminiUsage({ ...GEMINI_USAGE, candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: 900 }] })!.audioOutput, 200, 'never past the output');

  // A stream: the first chunk without the cache (its prompt audio all uncached so far), the last with it.
  const first = geminiCounts({ promptTokenCount: 1000, totalTokenCount: 1000, promptTokensDetails: GEMINI_USAGE.promptTokensDetails })!;
  t.equal(countsUsage(first).audioInput, 600);
  const last = laterCounts(first, geminiCounts(GEMINI_USAGE)!);
  t.strictSame(countsUsage(last), u, 'the last chunk: the cached audio taken out, as the whole answer');
  const falling = laterCounts(last, geminiCounts({ ...GEMINI_USAGE, candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: 1 }] })!);
  t.equal(countsUsage(falling).audioOutput, 50, 'a falling report is not believed');
});

t.test('addUsage: the parts add up; none in either, none', async (t) => {
  const a: Usage = { input: 100, cached: null, cacheWrite: null, output: 10, reasoning: null, audioInput: 60 };
  const b: Usage = { input: 50, cached: null, cacheWrite: null, output: 10, reasoning: null, audioOutput: 4 };
  t.strictSame(addUsage(a, b), { input: 150, cached: null, cacheWrite: null, output: 20, reasoning: null, audioInput: 60, audioOutput: 4 });
  t.equal(addUsage(a, a).audioInput, 120);
  const plain: Usage = { input: 1, cached: null, cacheWrite: null, output: 1, reasoning: null };
  t.notOk('audioInput' in addUsage(plain, plain) || 'audioOutput' in addUsage(plain, plain));
});

t.test('the price: input_audio and output_audio, defaulting to input and output, tiers included', async (t) => {
  const u: Usage = { input: 1100, cached: 100, cacheWrite: null, output: 600, reasoning: 0, audioInput: 1000, audioOutput: 500 };
  // 100 x 2.5 + 1000 x 40 + 100 x 2.5 (cached: input) + 100 x 10 + 500 x 80 = 250 + 40000 + 250 + 1000 + 40000 = 81500
  t.equal(listCostPico(u, AUDIO_PREVIEW), 81_500_000_000, 'audio at the audio prices');
  t.equal(listCostPico(u, { input: 2.5, output: 10 }), (1100 * 2.5 + 100 * 2.5 + 600 * 10) * 1e6, 'no audio prices: input and output, as before');
  t.equal(listCostPico(u, { input: 2.5, output: 10, input_audio: 40 }), (100 * 2.5 + 1000 * 40 + 100 * 2.5 + 600 * 10) * 1e6, 'each defaults on its own');
  const over: Usage = { input: 10, cached: null, cacheWrite: null, output: 5, reasoning: null, audioInput: 50, audioOutput: 50 };
  t.equal(listCostPico(over, AUDIO_PREVIEW), (10 * 40 + 5 * 80) * 1e6, 'a part past its whole (made by hand) is priced as the whole, never below 0');
  const tiered: Price = { ...AUDIO_PREVIEW, tiers: [{ above_input_tokens: 1000, input: 5, input_audio: 60 }] };
  t.equal(listCostPico(u, tiered), (100 * 5 + 1000 * 60 + 100 * 5 + 100 * 10 + 500 * 80) * 1e6, 'a tier sets the audio price like the others');
  const tierDefault: Price = { input: 2.5, output: 10, tiers: [{ above_input_tokens: 1000, input: 5 }] };
  t.equal(listCostPico(u, tierDefault), (1100 * 5 + 100 * 5 + 600 * 10) * 1e6, "no audio price: the tier's input");
  const priority: Price = { ...AUDIO_PREVIEW, service_tiers: { priority: { input_audio: 70, output_audio: 140 } } };
  t.equal(listCostPico({ ...u, serviceTier: 'priority' }, priority), (100 * 2.5 + 1000 * 70 + 100 * 2.5 + 100 * 10 + 500 * 140) * 1e6, 'a service tier too');

  const provider = { group: 'paid', format: 'openai', price: AUDIO_PREVIEW, models: {}, catalog: '' } as unknown as ProviderConfig;
  t.equal(computeCost(provider, 'm', { ...u, serviceTier: 'flex' }).cost, 0.04075, "flex with no flex prices: half of each, the audio's too");
});

t.test('the catalog: Gemini models that bill audio input apart', async (t) => {
  t.match(catalogPrice('google', 'gemini-2.5-flash'), { input: 0.3, input_audio: 1 });
  t.match(catalogPrice('google', 'gemini-2.0-flash'), { input: 0.1, input_audio: 0.7 });
  t.equal(catalogPrice('google', 'gemini-2.5-pro')?.input_audio, undefined, 'Pro bills audio as text');
});

// --- Through the gateway --------------------------------------------------------------------------------------

t.test('through the gateway: row, span and request log with the audio parts and their prices', async (t) => {
  const up = await listenLoopback(t, async (req, res) => {
    const body = await read(req);
    const url = req.url ?? '';
    if (url.includes(':generateContent')) return json(res, { candidates: [cand('Hello there', 'STOP')], usageMetadata: GEMINI_USAGE, modelVersion: 'g' });
    if (url.includes(':streamGenerateContent')) {
      return sse(res, [
        // Before the last chunk: the prompt and its modalities alone, as Gemini sends them.
        { candidates: [cand('Hello')], usageMetadata: { promptTokenCount: 1000, totalTokenCount: 1000, promptTokensDetails: GEMINI_USAGE.promptTokensDetails }, modelVersion: 'g' },
        { candidates: [cand(' there', 'STOP')], usageMetadata: GEMINI_USAGE, modelVersion: 'g' },
      ]);
    }
    const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: String(body.model) };
    if (body.stream === true) {
      return sse(res, [
        { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] },
        { ...base, choices: [], usage: OPENAI_USAGE },
        'data: [DONE]\n\n',
      ]);
    }
    return json(res, { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: OPENAI_USAGE });
  }, (err, res) => res.writeHead(500).end(String(err)));
  const base = `http://127.0.0.1:${up.port}`;
  const provider = (format: string, price: Price | undefined, models: string[]) => ({
    group: 'paid', format, base_url: base, auth: { type: 'api_key', key: 'k' }, ...(price === undefined ? {} : { price }), models: Object.fromEntries(models.map((m) => [m, { kind: 'llm' }])),
  });
  const gw = await startApp(t, {
    providers: {
      oai: provider('openai', { ...AUDIO_PREVIEW, cached: 1.25 }, ['gpt-4o-audio-preview']),
      gem: provider('gemini', { input: 0.3, output: 2.5, cached: 0.03, input_audio: 1, output_audio: 10 }, ['g']),
      // Priced by the catalog (its prefix is the catalog's `google`): input_audio 1 from the catalog's audio prices.
      google: provider('gemini', undefined, ['gemini-2.5-flash']),
    },
  });
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.status, text: await r.text() };
  };
  const audio = (r: Record<string, unknown>) => [Number(r.input_tokens), Number(r.audio_input_tokens), Number(r.output_tokens), Number(r.audio_output_tokens)];

  // OpenAI: 100 x 2.5 + 1000 x 40 + 100 x 1.25 + 100 x 10 + 500 x 80 = 250 + 40000 + 125 + 1000 + 40000 = 81375 per 1M
  const OAI_COST = 0.081375;
  // Gemini: 300 x 0.3 + 300 x 1 + 400 x 0.03 + 150 x 2.5 + 50 x 10 + 100 x 2.5 = 90 + 300 + 12 + 375 + 500 + 250 = 1527 per 1M
  const GEM_COST = 0.001527;
  // The catalog's gemini-2.5-flash (input 0.3, cached 0.075, output 2.5, input_audio 1; output audio at output):
  // 300 x 0.3 + 300 x 1 + 400 x 0.075 + 200 x 2.5 + 100 x 2.5 = 90 + 300 + 30 + 500 + 250 = 1170 per 1M
  const CATALOG_COST = 0.00117;
  const chat = { model: 'oai/gpt-4o-audio-preview', messages: [{ role: 'user', content: 'hi' }] };
  const gemAsk = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
  const anthropicAsk = { model: 'gem/g', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
  const cases: [string, () => Promise<{ status: number; text: string }>, number[], number][] = [
    ['chat whole', () => post('/v1/chat/completions', chat), [1100, 1000, 600, 500], OAI_COST],
    ['chat streamed', () => post('/v1/chat/completions', { ...chat, stream: true, stream_options: { include_usage: true } }), [1100, 1000, 600, 500], OAI_COST],
    ['responses client of a Chat upstream', () => post('/v1/responses', { model: 'oai/gpt-4o-audio-preview', input: 'hi' }), [1100, 1000, 600, 500], OAI_COST],
    ['gemini whole', () => post('/v1beta/models/gem/g:generateContent', gemAsk), [600, 300, 200, 50], GEM_COST],
    ['gemini streamed', () => post('/v1beta/models/gem/g:streamGenerateContent?alt=sse', gemAsk), [600, 300, 200, 50], GEM_COST],
    ['anthropic client of Gemini', () => post('/v1/messages', anthropicAsk), [600, 300, 200, 50], GEM_COST],
    ['anthropic client of Gemini, streamed', () => post('/v1/messages', { ...anthropicAsk, stream: true }), [600, 300, 200, 50], GEM_COST],
    ['chat client of Gemini, streamed', () => post('/v1/chat/completions', { model: 'gem/g', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }), [600, 300, 200, 50], GEM_COST],
    ['catalog-priced Gemini', () => post('/v1beta/models/google/gemini-2.5-flash:generateContent', gemAsk), [600, 300, 200, 50], CATALOG_COST],
  ];
  const answers = new Map<string, string>();
  for (const [name, send, want, cost] of cases) {
    const r = await send();
    t.equal(r.status, 200, `${name}: 200`);
    answers.set(name, r.text);
    const row = (await gw.rows("kind = 'request'")).at(-1)!;
    t.strictSame(audio(row), want, `${name}: input, audio input, output, audio output`);
    t.equal(Number(row.cost), cost, `${name}: cost at the audio prices`);
  }

  const streamedUsage = (text: string) =>
    text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { usage?: Record<string, unknown> }).filter((d) => d.usage).at(-1)?.usage;
  t.match(streamedUsage(answers.get('chat client of Gemini, streamed')!), {
    prompt_tokens: 1000, prompt_tokens_details: { cached_tokens: 400, audio_tokens: 300 }, completion_tokens_details: { reasoning_tokens: 100, audio_tokens: 50 },
  }, "a Chat client of Gemini sees the audio in its format's field");
  const anthropicUsage = (JSON.parse(answers.get('anthropic client of Gemini')!) as { usage: Record<string, unknown> }).usage;
  t.strictSame(Object.keys(anthropicUsage).filter((k) => k.includes('audio')), [], 'an Anthropic client: no field for it, nothing added');

  const spans = gw.spans.getFinishedSpans().filter((s) => s.attributes['tollgate.kind'] === 'request' && s.attributes['tollgate.cost_usd'] !== undefined);
  t.equal(spans.length, cases.length, 'one server span per request');
  for (const s of spans) {
    const oai = s.attributes['tollgate.provider'] === 'oai';
    t.equal(s.attributes['tollgate.usage.audio_input_tokens'], oai ? 1000 : 300, 'span: audio input');
    t.equal(s.attributes['tollgate.usage.audio_output_tokens'], oai ? 500 : 50, 'span: audio output');
  }

  const logs = (await (await fetch(`${gw.url}/api/usage/request-logs?limit=100`)).json()) as { data: { provider: string; cost: number; usage: Record<string, unknown> }[] };
  t.equal(logs.data.length, cases.length);
  for (const e of logs.data) {
    const oai = e.provider === 'oai';
    t.equal(e.usage.audio_input, oai ? 1000 : 300, 'request log: audio_input');
    t.equal(e.usage.audio_output, oai ? 500 : 50, 'request log: audio_output');
  }
});
