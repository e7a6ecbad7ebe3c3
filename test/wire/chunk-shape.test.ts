// A stream's content chunks read without a parse (src/wire/openai/chunk-shape.ts): whatever the text, the shape
// either gives exactly what JSON.parse would (the chunk's `choices[0].delta.content`) or nothing, and then the relay
// parses. Properties over any content, any obfuscation padding and any one-character change of a chunk's text.

import t from 'tap';
import fc from 'fast-check';
import { ChunkShape } from '../../src/wire/openai/chunk-shape.js';

type Json = Record<string, unknown>;

/** An OpenAI chunk as OpenAI writes it (JSON.stringify's spelling), `obfuscation` after the choices when given. */
function chunk(content: string, obfuscation?: string, extra: Json = {}): string {
  return JSON.stringify({
    id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', service_tier: 'default', system_fingerprint: 'fp_1',
    choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], usage: null, ...extra, ...(obfuscation === undefined ? {} : { obfuscation }),
  });
}

function learnt(data: string): ChunkShape {
  const shape = new ChunkShape();
  const j = JSON.parse(data) as { choices: { delta: { content: string } }[]; obfuscation?: unknown };
  shape.learn({ data, content: j.choices[0]!.delta.content, obfuscation: j.obfuscation });
  return shape;
}

/** What a parse says the relay reads: the chunk's content, when it is the learnt chunk with other strings in the holes. */
function parsedContent(learntData: string, data: string): string | null {
  let j: Json;
  try {
    j = JSON.parse(data) as Json;
  } catch {
    return null;
  }
  const l = JSON.parse(learntData) as Json;
  const content = (j.choices as { delta?: { content?: unknown } }[] | undefined)?.[0]?.delta?.content;
  if (typeof content !== 'string' || content === '') return null;
  // The same chunk but for the holes' values.
  const same = JSON.stringify({ ...j, choices: [{ ...(j.choices as Json[])[0], delta: { content: '' } }], obfuscation: typeof j.obfuscation === 'string' ? '' : j.obfuscation })
    === JSON.stringify({ ...l, choices: [{ ...(l.choices as Json[])[0], delta: { content: '' } }], obfuscation: typeof l.obfuscation === 'string' ? '' : l.obfuscation });
  return same ? content : null;
}

const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', ' ', '"', '\\', '\n', 'a"b', 'é', '\u2028', '\ud800', '"content":"x'));

t.test('a chunk of the learnt shape gives its content, exactly what a parse gives', async (t) => {
  fc.assert(fc.property(fc.string({ minLength: 1 }), text, fc.option(fc.tuple(fc.string(), fc.string()), { nil: undefined }), (first, next, pads) => {
    const a = chunk(first, pads?.[0]);
    const b = chunk(next, pads?.[1]);
    const got = learnt(a).content(b);
    // Written as it is (no escape in the chunk's text for it: JSON.stringify escapes quotes, backslashes, control
    // characters and lone surrogates).
    const asIs = (s: string): boolean => JSON.stringify(s) === `"${s}"`;
    // Taken: the parse agrees. Not taken: only a content a parse must read (an escape in the chunk's text), or none.
    if (got !== null) return got === next && parsedContent(a, b) === next;
    return next === '' || !asIs(next) || (pads !== undefined && !asIs(pads[1]));
  }), { numRuns: 2000 });
  t.pass('2000 pairs of chunks');
});

t.test('a chunk changed anywhere by one character is taken only when it still parses to the learnt chunk with its strings', async (t) => {
  const a = chunk('Hello', 'pad01');
  const shape = learnt(a);
  const base = chunk(' world', 'x9');
  fc.assert(fc.property(fc.nat(base.length), fc.nat(base.length), fc.constantFrom('', 'a', '"', '\\', '}', ',', ' ', ':', '0', '\n'), (at, len, insert) => {
    const data = base.slice(0, at) + insert + base.slice(Math.min(base.length, at + (len % 3)));
    const got = shape.content(data);
    return got === null || got === parsedContent(a, data);
  }), { numRuns: 5000 });
  t.equal(shape.content(base), ' world', 'the chunk itself is taken');
  t.equal(shape.content(chunk('', 'x9')), null, 'a chunk without text is parsed (it says something else)');
  t.equal(shape.content(chunk('a\\b')), null, 'without its padding: another shape');
  t.equal(shape.content(chunk('tab\there', 'x9')), null, 'an escape: parsed');
  t.equal(shape.content(chunk('x', 'x9', { usage: { prompt_tokens: 1 } })), null, 'usage in it: another shape');
});

t.test('nothing is learnt from a chunk whose text does not show its holes once', async (t) => {
  // The first "content" is not the delta's: a shape with its hole there would read another field's text.
  const twice = '{"x":{"content":"a"},"choices":[{"delta":{"content":"a"}}]}';
  const shape = new ChunkShape();
  shape.learn({ data: twice, content: 'a', obfuscation: undefined });
  t.equal(shape.content('{"x":{"content":"b"},"choices":[{"delta":{"content":"a"}}]}'), null, '"content" twice: no shape');
  t.equal(shape.content('{"x":{"content":"a"},"choices":[{"delta":{"content":"b"}}]}'), null, '"content" twice: no shape (either way)');
  const other = new ChunkShape();
  other.learn({ data: chunk('a'), content: 'b', obfuscation: undefined });
  t.equal(other.content(chunk('c')), null, 'the text says another content than the parse: no shape');
  const noPad = new ChunkShape();
  noPad.learn({ data: chunk('a'), content: 'a', obfuscation: 'p' });
  t.equal(noPad.content(chunk('c')), null, 'a padding the text does not carry: no shape');
  const escaped = learnt(chunk('say "hi"\n'));
  t.equal(escaped.content(chunk('plain')), 'plain', 'learnt from a content with escapes, then a plain one is read');
  t.equal(new ChunkShape().content(chunk('a')), null, 'nothing learnt: nothing read');
});

t.test('a chunk that begins as the shape does is not learnt from again; one that begins otherwise is', async (t) => {
  const shape = learnt(chunk('a'));
  // Parsed because of something past its content (here a field after it): the shape it has is kept.
  const after = chunk('b', undefined, { extra: 1 });
  shape.learn({ data: after, content: 'b', obfuscation: undefined });
  t.equal(shape.content(chunk('c')), 'c', 'the first shape still read');
  t.equal(shape.content(chunk('d', undefined, { extra: 1 })), null, 'the other not learnt');
  // Another stream's chunks, or a field before the content: learnt.
  const other = chunk('x').replace('chatcmpl-1', 'chatcmpl-2');
  shape.learn({ data: other, content: 'x', obfuscation: undefined });
  t.equal(shape.content(chunk('y').replace('chatcmpl-1', 'chatcmpl-2')), 'y', 'a chunk beginning otherwise teaches its shape');
  t.equal(shape.content(chunk('c')), null, 'in place of the first');
});

