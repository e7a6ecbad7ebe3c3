// Gemini's Grounding with Google Search is billed per search query (Gemini 3) or per grounded prompt (2.x). An answer
// names its queries (`candidates[].groundingMetadata.webSearchQueries`); they are the row's web searches, priced at
// `web_search_per_1k` (no default for Gemini). Before, they were never counted, and a `web_search_per_1k` set on a
// Gemini provider was accepted and never applied. Here: the count from a whole answer, a stream and a JSON array of
// chunks; then calls through the gateway, the same-format passthrough (whole and streamed) and translated.

import t from 'tap';
import { listenLoopback } from '../helpers/loopback.js';
import { startApp } from '../helpers/app.js';
import { groundingSearches, geminiUsage, withGrounding } from '../../src/wire/gemini/usage.js';
import { parseGeminiResponse } from '../../src/wire/gemini/response.js';
import { codecFor, sameFormatFor } from '../../src/wire/registry.js';
import type { CanonicalEvent } from '../../src/wire/canonical.js';
import type { SseFrame } from '../../src/wire/sse.js';

const USAGE = { promptTokenCount: 100, candidatesTokenCount: 20, toolUsePromptTokenCount: 30, totalTokenCount: 150 };
const grounded = (queries: unknown) => ({ content: { role: 'model', parts: [{ text: 'It is sunny.' }] }, finishReason: 'STOP', index: 0, groundingMetadata: { webSearchQueries: queries } });

t.test('the queries counted: distinct, over the candidates, bounded', async (t) => {
  t.equal(groundingSearches({ candidates: [grounded(['weather paris', 'paris forecast'])] }), 2);
  t.equal(groundingSearches({ candidates: [grounded(['a', 'b']), { ...grounded(['b', 'c']), index: 1 }] }), 3, 'distinct over the candidates');
  t.equal(groundingSearches({ candidates: [grounded([])] }), null, 'none named');
  t.equal(groundingSearches({ candidates: [{ content: {} }] }), null, 'not grounded');
  t.equal(groundingSearches({ candidates: [grounded(Array.from({ length: 101 }, (_, i) => `q${i}`))] }), null, 'more than 100: not believed');
  t.equal(groundingSearches({ candidates: [grounded(['a', 3, null])] }), 1, 'only strings');
  t.equal(parseGeminiResponse({ candidates: [grounded(['a', 'b'])], usageMetadata: USAGE }).usage?.webSearches, 2, 'a whole answer');
  t.notOk('webSearches' in parseGeminiResponse({ candidates: [grounded([])], usageMetadata: USAGE }).usage!);
  t.same(withGrounding(geminiUsage(USAGE), null), geminiUsage(USAGE), 'no searches: the usage as it is');
  t.equal(withGrounding(null, 2), null, 'no usage: none made up');

  const parser = codecFor('gemini').createStreamParser();
  const frame = (data: unknown): SseFrame => ({ event: null, data: JSON.stringify(data), id: null }) as SseFrame;
  const events = [
    frame({ candidates: [{ content: { role: 'model', parts: [{ text: 'It is' }] }, index: 0 }], usageMetadata: { promptTokenCount: 100, totalTokenCount: 100 } }),
    frame({ candidates: [grounded(['weather paris', 'paris forecast'])], usageMetadata: USAGE }),
  ].flatMap((f) => parser.frame(f));
  const usages = events.filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage');
  t.equal(usages.at(-1)?.usage.webSearches, 2, 'a stream: the chunk that names them');
  const late = codecFor('gemini').createStreamParser();
  const lateEvents = [
    frame({ candidates: [{ content: { role: 'model', parts: [{ text: 'x' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: USAGE }),
    frame({ candidates: [grounded(['q'])] }),
  ].flatMap((f) => late.frame(f));
  const lateUsage = lateEvents.filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage').at(-1)?.usage;
  t.equal(lateUsage?.webSearches, 1, 'named on a chunk after the last usage report: the usage said again');
  t.equal(lateUsage?.input, 130, 'with the counts it had');

  // A stream may name its queries over several chunks, each a part, or each the list so far: the distinct ones over
  // them all. Before, the most any one chunk named (2 here, of 3 run).
  const spread = codecFor('gemini').createStreamParser();
  const spreadUsage = [
    frame({ candidates: [grounded(['weather paris', 'paris forecast'])], usageMetadata: { promptTokenCount: 100, totalTokenCount: 100 } }),
    frame({ candidates: [grounded(['paris rain'])] }),
    frame({ candidates: [grounded(['paris forecast', 'paris rain'])], usageMetadata: USAGE }),
  ].flatMap((f) => spread.frame(f)).filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage').at(-1)?.usage;
  t.equal(spreadUsage?.webSearches, 3, 'over the chunks: the distinct queries of them all');
  const cumulative = codecFor('gemini').createStreamParser();
  const cumulativeUsage = [
    frame({ candidates: [grounded(['a'])], usageMetadata: { promptTokenCount: 100, totalTokenCount: 100 } }),
    frame({ candidates: [grounded(['a', 'b'])], usageMetadata: USAGE }),
  ].flatMap((f) => cumulative.frame(f)).filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage').at(-1)?.usage;
  t.equal(cumulativeUsage?.webSearches, 2, 'each chunk the list so far: not counted twice');
  const many = codecFor('gemini').createStreamParser();
  const manyUsage = Array.from({ length: 3 }, (_, i) => frame({ candidates: [grounded(Array.from({ length: 40 }, (_, j) => `q${i}-${j}`))], usageMetadata: USAGE }))
    .flatMap((f) => many.frame(f)).filter((e): e is Extract<CanonicalEvent, { type: 'usage' }> => e.type === 'usage').at(-1)?.usage;
  t.notOk(manyUsage !== undefined && 'webSearches' in manyUsage, 'more than 100 over the chunks: not believed');
  const array = sameFormatFor('gemini')?.usageOf([
    { candidates: [grounded(['x', 'y'])] },
    { candidates: [grounded(['z'])], usageMetadata: USAGE },
  ]);
  t.equal(array?.webSearches, 3, 'a JSON array of chunks: the distinct queries over them');
});

t.test('through the gateway: passthrough whole, streamed and as an array; translated; priced at web_search_per_1k', async (t) => {
  const answer = { candidates: [grounded(['weather paris', 'paris forecast'])], usageMetadata: USAGE, modelVersion: 'gemini-3-flash' };
  const up = await listenLoopback(t, async (req, res) => {
    for await (const _ of req);
    if (req.url!.includes(':streamGenerateContent')) {
      if (!req.url!.includes('alt=sse')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([answer]));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`data: ${JSON.stringify(answer)}\n\n`);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }, (err, res) => res.writeHead(500).end(String(err)));
  const gw = await startApp(t, {
    providers: {
      g: {
        group: 'paid', format: 'gemini', base_url: `http://127.0.0.1:${up.port}/v1beta`, auth: { type: 'api_key', key: 'k' },
        price: { input: 1, output: 2, web_search_per_1k: 14 }, models: { 'gemini-3-flash': { kind: 'llm' } },
      },
    },
  });
  // 130 input x $1 + 20 output x $2 per 1M, and 2 queries at $14 per 1,000.
  const COST = (130 * 1 + 20 * 2) / 1e6 + 0.028;
  const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'weather in paris?' }] }], tools: [{ google_search: {} }] });
  const ids: string[] = [];
  for (const path of [':generateContent', ':streamGenerateContent?alt=sse', ':streamGenerateContent']) {
    const res = await fetch(`${gw.url}/v1beta/models/g/gemini-3-flash${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    t.equal(res.status, 200, path);
    await res.text();
    ids.push(res.headers.get('x-request-id')!);
  }
  const chat = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'g/gemini-3-flash', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(chat.status, 200, 'translated');
  await chat.text();
  ids.push(chat.headers.get('x-request-id')!);
  await gw.flush();
  for (const id of ids) {
    const [row] = await gw.rows(`request_id = '${id}'`);
    t.match(row, { web_search_requests: 2, input_tokens: 130, output_tokens: 20 }, `${row?.endpoint}: the searches counted`);
    t.equal(Number(row?.cost), Number(COST.toFixed(12)), `${row?.endpoint}: and priced`);
  }
});
