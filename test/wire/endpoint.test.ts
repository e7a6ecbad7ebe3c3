// Upstream paths (src/wire/endpoint.ts): `<base_url path><suffix>`, with nothing kept per suffix. A suffix can carry
// client input (the Gemini passthrough's `alt` value, a model id under allow_unlisted_models), so a memo keyed by it
// grew by every distinct value a client sent, for the life of the provider config. Checked with a real collection:
// thousands of distinct 16 KB suffixes leave the heap where it was, and the paths stay right.

import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parseConfig } from '../../src/config/load.js';
import { endpointPath } from '../../src/wire/endpoint.js';
import { geminiSameFormat } from '../../src/wire/gemini/same-format.js';
import type { SameFormatCall } from '../../src/wire/same-format.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const cfg = parseConfig({
  providers: {
    gem: { group: 'paid', format: 'gemini', base_url: 'https://proxy.example.com/google/v1beta/', auth: { type: 'api_key', key: 'k' }, allow_unlisted_models: true, models: { 'gemini-2.5-flash': { kind: 'llm' } } },
    root: { group: 'paid', format: 'anthropic', base_url: 'https://api.example.com', auth: { type: 'api_key', key: 'k' }, models: { m: { kind: 'llm' } } },
    mock: { group: 'free', format: 'mock', models: { 'echo-1': { kind: 'llm' } } },
  },
}, {});
const gem = cfg.providers.gem!;

/** Heap in use after full collections, in bytes. */
function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

t.test('the path is the base_url path (no trailing slash) and the suffix, or the fallback base', async (t) => {
  t.equal(endpointPath(gem, '/models/gemini-2.5-flash:generateContent', '/v1beta'), '/google/v1beta/models/gemini-2.5-flash:generateContent');
  t.equal(endpointPath(gem, '/models/gemini-2.5-flash:generateContent', '/v1beta'), '/google/v1beta/models/gemini-2.5-flash:generateContent', 'the same again');
  t.equal(endpointPath(cfg.providers.root!, '/v1/messages'), '/v1/messages', 'a base_url without a path');
  t.equal(endpointPath(cfg.providers.mock!, '/chat/completions', '/v1'), '/v1/chat/completions', 'no base_url: the fallback');
  t.equal(endpointPath(cfg.providers.mock!, '/responses'), '/responses', 'no base_url and no fallback');
  const call = { stream: false, action: 'generateContent', alt: 'json & more' } satisfies SameFormatCall;
  t.equal(geminiSameFormat.upstreamPath(gem, 'models/gemini-2.5-flash', call), '/google/v1beta/models/gemini-2.5-flash:generateContent?alt=json%20%26%20more', "the client's alt, encoded");
});

t.test('distinct client-supplied endings leave nothing behind', async (t) => {
  const N = 2_000;
  const pad = 'x'.repeat(16 * 1024);
  // Warm up first (the functions compiled, the base parsed), so the measure sees only what the calls keep.
  for (let i = 0; i < 50; i++) endpointPath(gem, `/models/warm-${i}:generateContent`, '/v1beta');
  const before = heapAfterGc();
  let wrong = 0;
  for (let i = 0; i < N; i++) {
    const alt = `${pad}${i}`;
    const viaAlt = geminiSameFormat.upstreamPath(gem, 'gemini-2.5-flash', { stream: true, action: 'streamGenerateContent', alt } satisfies SameFormatCall);
    if (viaAlt !== `/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=${alt}`) wrong++;
    const model = `unlisted-${pad}-${i}`; // allow_unlisted_models: the id is the client's
    if (endpointPath(gem, `/models/${model}:generateContent`, '/v1beta') !== `/google/v1beta/models/${model}:generateContent`) wrong++;
  }
  t.equal(wrong, 0, 'every path is right');
  const retained = heapAfterGc() - before;
  // Kept per suffix, 2 x 2,000 endings of 16 KB would be 64 MB or more.
  t.ok(retained < 8 * 1024 * 1024, `${(retained / 1048576).toFixed(1)} MiB retained after ${2 * N} distinct 16 KB endings (bound: 8 MiB)`);
});
