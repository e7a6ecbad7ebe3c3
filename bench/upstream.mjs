// The fake OpenAI-compatible upstream, run in its own process by bench/run.mjs. POST /v1/chat/completions answers
// a fixed chat.completion with usage (prompt/completion tokens, cached and reasoning details); with `stream: true`
// it sends SSE chunks (each with `usage: null` when stream_options.include_usage is set), a finish chunk, the
// usage chunk (`choices: []`) when include_usage is set, then `data: [DONE]`, as OpenAI does.
//
//   env BENCH_STREAM_CHUNKS   content chunks per streamed answer (default 24)
//   env BENCH_UPSTREAM_DELAY_MS   delay before answering, ms (default 0: measure the proxies, not the wait)

import { createServer } from 'node:http';
import { ANSWER, USAGE, answerChunks } from './lib/payloads.mjs';
import { announceReady, cpuMicros, serveParent } from './lib/ipc.mjs';

const CHUNKS = answerChunks(Number(process.env.BENCH_STREAM_CHUNKS ?? 24));
const DELAY_MS = Number(process.env.BENCH_UPSTREAM_DELAY_MS ?? 0);
const CREATED = 1731000000;
const FINGERPRINT = 'fp_bench_0001';

// Everything after "model" is the same for every answer: serialise it once.
const COMPLETION_TAIL = JSON.stringify({
  choices: [{ index: 0, message: { role: 'assistant', content: ANSWER, refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }],
  usage: USAGE,
  service_tier: 'default',
  system_fingerprint: FINGERPRINT,
}).slice(1);

const chunkTail = (choices, usage) => JSON.stringify({ service_tier: 'default', system_fingerprint: FINGERPRINT, choices, ...usage }).slice(1);
const streamTails = (withUsage) => {
  const u = withUsage ? { usage: null } : {};
  return {
    first: chunkTail([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], u),
    content: CHUNKS.map((c) => chunkTail([{ index: 0, delta: { content: c }, logprobs: null, finish_reason: null }], u)),
    finish: chunkTail([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], u),
    usage: chunkTail([], { usage: USAGE }),
  };
};
const TAILS = { true: streamTails(true), false: streamTails(false) };

let served = 0;
let badRequests = 0;

function head(id, model, object) {
  return `{"id":"${id}","object":"${object}","created":${CREATED},"model":${JSON.stringify(model)},`;
}

async function handle(req, res) {
  if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"not found","type":"invalid_request_error"}}');
    return;
  }
  const parts = [];
  for await (const c of req) parts.push(c);
  let body;
  try {
    body = JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    badRequests++;
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"body is not JSON","type":"invalid_request_error"}}');
    return;
  }
  served++;
  if (DELAY_MS > 0) await new Promise((r) => setTimeout(r, DELAY_MS));
  const id = `chatcmpl-bench${served.toString(36).padStart(8, '0')}`;
  const model = typeof body.model === 'string' ? body.model : 'unknown';
  const requestId = `req_bench_${served}`;

  if (body.stream !== true) {
    const text = head(id, model, 'chat.completion') + COMPLETION_TAIL;
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-request-id': requestId,
      'openai-processing-ms': '412',
    });
    res.end(text);
    return;
  }

  const includeUsage = body.stream_options?.include_usage === true;
  const t = TAILS[includeUsage];
  const h = head(id, model, 'chat.completion.chunk');
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': requestId });
  // One write per SSE event, as a real provider's tokens arrive one event at a time.
  res.write(`data: ${h}${t.first}\n\n`);
  for (const c of t.content) res.write(`data: ${h}${c}\n\n`);
  res.write(`data: ${h}${t.finish}\n\n`);
  if (includeUsage) res.write(`data: ${h}${t.usage}\n\n`);
  res.end('data: [DONE]\n\n');
}

const server = createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: String(err?.message ?? err) } }));
  });
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;

await new Promise((r) => server.listen(0, '127.0.0.1', r));
serveParent({
  cpu: () => cpuMicros(),
  stats: () => ({ served, badRequests }),
  stop: () =>
    new Promise((r) => {
      server.close(() => r(null));
      server.closeAllConnections();
    }),
});
announceReady({ url: `http://127.0.0.1:${server.address().port}` });
