// Token estimates (src/wire/estimate.ts): the family and encoding of a model, exact counts for OpenAI models with
// the chat overhead OpenAI documents, media allowances, the per-family factor, the guard against long runs, and
// the rule that a reported side is never replaced.

import t from 'tap';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import {
  ANTHROPIC, AnswerText, GEMINI, MEDIA_ALLOWANCE, OPENAI_CL100K, OPENAI_O200K, OTHER, answerOf, estimateInput, estimateMissing,
  estimateOutput, familyOf,
} from '../../src/wire/estimate.js';
import { NO_USAGE } from '../../src/ledger/types.js';
import type { CanonicalRequest } from '../../src/wire/canonical.js';

t.test('family: from the model id when it names one, else from the wire format', async (t) => {
  t.equal(familyOf('openai', 'gpt-4o-mini'), OPENAI_O200K);
  t.equal(familyOf('openai', 'gpt-4.1'), OPENAI_O200K);
  t.equal(familyOf('openai-responses', 'o4-mini'), OPENAI_O200K);
  t.equal(familyOf('openai', 'o3'), OPENAI_O200K);
  t.equal(familyOf('openai', 'gpt-5'), OPENAI_O200K);
  t.equal(familyOf('openai', 'openai/gpt-4o'), OPENAI_O200K, 'a vendor prefix is ignored');
  t.equal(familyOf('openai', 'gpt-4'), OPENAI_CL100K);
  t.equal(familyOf('openai', 'gpt-4-turbo'), OPENAI_CL100K);
  t.equal(familyOf('openai', 'gpt-3.5-turbo'), OPENAI_CL100K);
  t.equal(familyOf('anthropic', 'claude-sonnet-4-5'), ANTHROPIC);
  t.equal(familyOf('openai', 'anthropic/claude-3.5-sonnet'), ANTHROPIC, 'Claude behind an OpenAI-compatible vendor');
  t.equal(familyOf('gemini', 'gemini-2.5-flash'), GEMINI);
  t.equal(familyOf('openai', 'llama-3.1-70b'), OTHER);
  t.equal(familyOf('anthropic', 'custom'), ANTHROPIC, 'an unknown id takes its format family');
});

t.test('input, OpenAI Chat body: every message text + 3 per message (+1 per name) + 3 priming, tools as JSON', async (t) => {
  const tool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const body = {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', name: 'ann', content: [{ type: 'text', text: 'Weather in Paris?' }, { type: 'image_url', image_url: { url: 'data:,', detail: 'low' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '18 C, sunny' },
    ],
    tools: [tool],
  };
  const text = ['system', 'You are terse.', 'user', 'ann', 'Weather in Paris?', 'assistant', 'get_weather', '{"city":"Paris"}', 'tool', '18 C, sunny', JSON.stringify(tool)];
  const expected = text.reduce((n, s) => n + o200k(s), 0) + 4 * 3 + 1 + 3 + MEDIA_ALLOWANCE.imageLow;
  t.equal(await estimateInput({ chat: body }, OPENAI_O200K), expected);
  const cl = text.reduce((n, s) => n + cl100k(s), 0) + 4 * 3 + 1 + 3 + MEDIA_ALLOWANCE.imageLow;
  t.equal(await estimateInput({ chat: body }, OPENAI_CL100K), cl, 'gpt-4 counts with cl100k_base');
});

t.test('input, canonical request: system as one message, parts, media allowances, tool definitions', async (t) => {
  const req: CanonicalRequest = {
    model: 'm', stream: true,
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Describe this.' }, { type: 'image', source: { kind: 'url', url: 'https://x/y.png' } }, { type: 'file', source: { kind: 'file_id', id: 'f' } }] },
      { role: 'assistant', content: [{ type: 'reasoning', text: 'Think.' }, { type: 'tool_call', id: 'c', name: 'look', arguments: '{}' }] },
      { role: 'user', content: [{ type: 'tool_result', callId: 'c', name: 'look', content: [{ type: 'text', text: 'a cat' }] }] },
    ],
    tools: [{ name: 'look', parameters: { type: 'object' } }],
  };
  const text = ['system', 'Be brief.', 'user', 'Describe this.', 'assistant', 'Think.', 'look', '{}', 'user', 'look', 'a cat', JSON.stringify(req.tools![0])];
  const tokens = text.reduce((n, s) => n + o200k(s), 0) + 4 * 3 + 3;
  const media = MEDIA_ALLOWANCE.image + MEDIA_ALLOWANCE.file;
  t.equal(await estimateInput({ canonical: req }, OPENAI_O200K), tokens + media);
  t.equal(await estimateInput({ canonical: req }, ANTHROPIC), Math.round(tokens * 1.2) + media, 'Anthropic: the count x 1.2; media unscaled');
});

t.test('output: the text as one string, scaled by the family factor', async (t) => {
  const text = 'Hello from the fake upstream, with a few more words.';
  t.equal(await estimateOutput(text, OPENAI_O200K), o200k(text));
  t.equal(await estimateOutput(text, ANTHROPIC), Math.round(o200k(text) * 1.2));
  t.equal(await estimateOutput('', OPENAI_O200K), 0);
});

t.test('a long run without spaces is cut into pieces: fast, and close to the whole count', async (t) => {
  const run = 'a'.repeat(200_000);
  const t0 = performance.now();
  const n = await estimateOutput(run, OPENAI_O200K);
  t.ok(performance.now() - t0 < 2000, 'bounded time (the whole run at once takes many seconds)');
  t.ok(n > 20_000 && n < 30_000, `about 8 characters a token (${n})`);
  const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(500);
  t.equal(await estimateOutput(prose, OPENAI_O200K), o200k(prose), 'ordinary text cut at spaces counts as a whole');
});

t.test('estimateMissing: only the unreported sides, reasoning in its own bucket, never a reported figure', async (t) => {
  const chat = { chat: { messages: [{ role: 'user', content: 'hi' }] } };
  const input = o200k('user') + o200k('hi') + 3 + 3;
  const answer = new AnswerText();
  answer.reasoning('Let me think.');
  answer.output('Hello');
  answer.output(' there');
  t.same(await estimateMissing(NO_USAGE, chat, answer, OPENAI_O200K), {
    input, cached: null, cacheWrite: null, output: o200k('Hello there'), reasoning: o200k('Let me think.'),
  });
  const reportedInput = { ...NO_USAGE, input: 40, cached: 2 };
  t.same(await estimateMissing(reportedInput, chat, answer, OPENAI_O200K), { ...reportedInput, output: o200k('Hello there'), reasoning: o200k('Let me think.') }, 'input side kept');
  const reported = { ...NO_USAGE, input: 40, output: 5 };
  t.equal(await estimateMissing(reported, chat, answer, OPENAI_O200K), null, 'both sides reported: nothing estimated');
  t.same(await estimateMissing(NO_USAGE, chat, new AnswerText(), OPENAI_O200K), { ...NO_USAGE, input, output: 0 }, 'nothing produced: output 0, reasoning null');
});

t.test('answerOf: text and tool calls are output, reasoning apart', async (t) => {
  const a = answerOf([{ type: 'reasoning', text: 'hm' }, { type: 'text', text: 'Hi' }, { type: 'tool_call', id: 'c', name: 'f', arguments: '{"a":1}' }]);
  t.equal(a.outputText, 'Hif{"a":1}');
  t.equal(a.reasoningText, 'hm');
  t.ok(a.seen);
  t.notOk(new AnswerText().seen);
});
