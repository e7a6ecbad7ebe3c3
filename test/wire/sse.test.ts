// SSE framing: bytes -> frames on any chunking (byte by byte, random splits, multi-byte characters cut in half),
// LF, CRLF and CR line ends, comments, multi-line data, a final frame without its blank line, and formatFrame
// round-tripping through the parser.

import t from 'tap';
import fc from 'fast-check';
import { MAX_FRAME_CHARS, SseParser, WholeFrames, formatFrame, type SseFrame } from '../../src/wire/sse.js';

const enc = new TextEncoder();

/** Parse `bytes` fed in pieces cut at `cuts` (byte offsets). */
function parseCut(bytes: Uint8Array, cuts: number[]): SseFrame[] {
  const p = new SseParser();
  const out: SseFrame[] = [];
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(...p.push(bytes.subarray(at, c)));
    at = c;
  }
  out.push(...p.end());
  return out;
}

const whole = (s: string | Uint8Array) => parseCut(typeof s === 'string' ? enc.encode(s) : s, []);
const byteByByte = (s: string | Uint8Array) => {
  const b = typeof s === 'string' ? enc.encode(s) : s;
  return parseCut(b, Array.from({ length: b.length }, (_, i) => i));
};

const frame = (data: string, event: string | null = null, id: string | null = null): SseFrame => ({ event, data, id });

// An OpenAI-style stream: JSON chunks, a keep-alive comment, multi-byte text, [DONE].
const chunk = (content: string) => JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const STREAM_DATA = [chunk('Hello'), chunk(' wörld'), chunk(' 你好'), chunk(' 👋🏽'), '[DONE]'];
const STREAM = `data: ${STREAM_DATA[0]}\n\n: keep-alive\n\ndata: ${STREAM_DATA[1]}\n\ndata: ${STREAM_DATA[2]}\n\ndata: ${STREAM_DATA[3]}\n\ndata: [DONE]\n\n`;

t.test('a whole stream in one chunk', async (t) => {
  t.same(whole(STREAM), STREAM_DATA.map((d) => frame(d)));
});

t.test('fed byte by byte: the same frames, each as soon as its blank line arrives', async (t) => {
  t.same(byteByByte(STREAM), STREAM_DATA.map((d) => frame(d)));
  const p = new SseParser();
  const b = enc.encode('data: one\n\ndata: two\n\n');
  const emittedAt: number[] = [];
  b.forEach((_, i) => {
    if (p.push(b.subarray(i, i + 1)).length > 0) emittedAt.push(i);
  });
  t.same(emittedAt, [10, 21], 'emitted on the second newline of each frame, not later');
  t.same(p.end(), [], 'nothing left over');
});

t.test('random chunk boundaries never change the result', async (t) => {
  const bytes = enc.encode(STREAM.replace(/\n/g, '\r\n'));
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let run = 0; run < 200; run++) {
    const cuts = Array.from({ length: 1 + Math.floor(rand() * 20) }, () => Math.floor(rand() * bytes.length)).sort((a, b) => a - b);
    const got = parseCut(bytes, cuts);
    if (JSON.stringify(got) !== JSON.stringify(STREAM_DATA.map((d) => frame(d)))) {
      t.fail(`cuts ${cuts.join(',')} gave ${JSON.stringify(got)}`);
      return;
    }
  }
  t.pass('200 random chunkings agree');
});

t.test('CRLF and CR line ends', async (t) => {
  const crlf = 'data: a\r\n\r\nevent: message\r\ndata: b\r\nid: 7\r\n\r\n';
  const expected = [frame('a'), frame('b', 'message', '7')];
  t.same(whole(crlf), expected, 'CRLF');
  t.same(byteByByte(crlf), expected, 'CRLF byte by byte: a CR and its LF in different chunks');
  t.same(parseCut(enc.encode(crlf), [8, 9, 10]), expected, 'cut between \\r and \\n of the blank line');
  t.same(whole('data: a\r\rdata: b\r\r'), [frame('a'), frame('b')], 'CR only');
  t.same(whole('data: x\r\ndata: y\r\n\r\n'), [frame('x\ny')], 'CRLF between data lines joins with \\n');
});

t.test('comments and unknown fields are ignored', async (t) => {
  t.same(whole(': OPENROUTER PROCESSING\n\n: ping\n\ndata: a\n\n'), [frame('a')], 'comment-only frames produce nothing');
  t.same(whole('data: a\n: in the middle\ndata: b\n\n'), [frame('a\nb')], 'a comment line inside a frame');
  t.same(whole('retry: 3000\ndata: a\nfoo: bar\n\n'), [frame('a')], 'retry and unknown fields');
  t.same(whole('id: 5\n\n'), [], 'a frame with neither data nor event is nothing');
});

t.test('comments kept for a relay (comments: true): as written, on any chunking; not kept otherwise', async (t) => {
  const text = ': OPENROUTER PROCESSING\n\ndata: a\n: in the middle\ndata: b\n\n:\n\n:  two spaces\r\n\r\ndata: c\n\n';
  const bytes = enc.encode(text);
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 8 }), (raw) => {
      const p = new SseParser({ comments: true });
      const frames: SseFrame[] = [];
      let comments = '';
      let at = 0;
      for (const c of [...[...raw].sort((a, b) => a - b), bytes.length]) {
        frames.push(...p.push(bytes.subarray(at, c)));
        comments += p.takeComments();
        at = c;
      }
      frames.push(...p.end());
      comments += p.takeComments();
      t.same(frames, [frame('a\nb'), frame('c')], 'the frames as without comments');
      t.same(comments.split('\n').filter((l) => l !== ''), [': OPENROUTER PROCESSING', ': in the middle', ':', ':  two spaces'], 'every comment line, in order');
      t.match(comments, /^((:[^\n]*\n)+\n)*$/, 'in comment blocks, each ended by a blank line');
    }),
    { numRuns: 50 },
  );
  const dropping = new SseParser();
  dropping.push(bytes);
  t.equal(dropping.takeComments(), '', 'without the option nothing is kept');
  t.equal(new SseParser({ comments: true }).takeComments(), '', 'none read: the empty string');
});

t.test('multi-line data is joined with \\n', async (t) => {
  t.same(whole('data: line one\ndata: line two\ndata:\ndata: line four\n\n'), [frame('line one\nline two\n\nline four')]);
  t.same(byteByByte('data: {"a":\ndata: 1}\n\n'), [frame('{"a":\n1}')]);
});

t.test('the value after the colon loses one leading space, no more', async (t) => {
  t.same(whole('data:x\n\n'), [frame('x')]);
  t.same(whole('data: x\n\n'), [frame('x')]);
  t.same(whole('data:  x\n\n'), [frame(' x')]);
  t.same(whole('data: a: b\n\n'), [frame('a: b')], 'only the first colon splits');
  t.same(whole('data\n\n'), [frame('')], 'a bare field name is an empty value');
  t.same(whole('event: error\ndata: {"error":{"message":"overloaded"}}\n\n'), [frame('{"error":{"message":"overloaded"}}', 'error')]);
});

t.test('a final frame without its blank line is flushed by end()', async (t) => {
  const p = new SseParser();
  t.same(p.push(enc.encode('data: first\n\ndata: last')), [frame('first')]);
  t.same(p.end(), [frame('last')]);
  t.same(whole('data: [DONE]\n'), [frame('[DONE]')], 'one newline');
  t.same(whole('data: [DONE]\r\n\r'), [frame('[DONE]')], 'cut inside the CRLF blank line');
  t.same(whole('data: a\n\n\n\n'), [frame('a')], 'extra blank lines are nothing');
  t.same(whole(''), []);
  t.same(whole('\n\n'), []);
  t.same(whole(': trailing comment'), []);
});

t.test('UTF-8 multi-byte characters split across chunks', async (t) => {
  const text = 'ä€𝄞👋🏽 中文';
  const b = enc.encode(`data: ${text}\n\n`);
  for (let cut = 1; cut < b.length; cut++) {
    const got = parseCut(b, [cut]);
    if (got.length !== 1 || got[0]!.data !== text) {
      t.fail(`cut at ${cut}: ${JSON.stringify(got)}`);
      return;
    }
  }
  t.pass('every single cut point decodes correctly');
  t.same(byteByByte(b), [frame(text)], 'byte by byte');
  const p = new SseParser();
  t.same(p.push(enc.encode('data: ').slice()), []);
  t.same(p.push(Uint8Array.of(0xf0, 0x9f)), []);
  t.same(p.push(Uint8Array.of(0x91, 0x8b, 0x0a, 0x0a)), [frame('👋')], 'a four-byte emoji in two halves');
  t.same(whole(Uint8Array.of(0xef, 0xbb, 0xbf, ...enc.encode('data: bom\n\n'))), [frame('bom')], 'a UTF-8 BOM at the start is dropped');
});

t.test('any bytes decode as the WHATWG UTF-8 decoder decodes them, invalid sequences included, on any chunking', async (t) => {
  // The parser decodes with Node's StringDecoder (faster here than TextDecoder, which goes through ICU): the same
  // text, a U+FFFD for each invalid sequence, a character cut between chunks joined again, a BOM only dropped first.
  let runs = 0;
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 48 }).map((b) => b.filter((x) => x !== 0x0a && x !== 0x0d)),
      fc.array(fc.nat(60), { maxLength: 6 }),
      fc.boolean(),
      (payload, cuts, bom) => {
        runs++;
        const bytes = Uint8Array.from([...(bom ? [0xef, 0xbb, 0xbf] : []), ...enc.encode('data:'), ...payload, 0x0a, 0x0a]);
        const got = parseCut(bytes, cuts.map((c) => Math.min(c, bytes.length)).sort((a, b) => a - b));
        // What the field's value is once decoded: the frame's value loses one leading space, as any frame's does.
        const value = new TextDecoder('utf-8', { ignoreBOM: true }).decode(payload).replace(/^ /, '');
        const wanted = [frame(value)];
        if (JSON.stringify(got) !== JSON.stringify(wanted)) throw new Error(`${Buffer.from(bytes).toString('hex')} cut at ${cuts}: ${JSON.stringify(got)}`);
      },
    ),
    { numRuns: 3000 },
  );
  t.equal(runs, 3000, 'every run compared');
});

t.test('formatFrame', async (t) => {
  t.equal(formatFrame('{"a":1}'), 'data: {"a":1}\n\n');
  t.equal(formatFrame('[DONE]'), 'data: [DONE]\n\n');
  t.equal(formatFrame('a\nb'), 'data: a\ndata: b\n\n', 'one data line per line');
  t.equal(formatFrame('x', 'error'), 'event: error\ndata: x\n\n');
  t.equal(formatFrame(''), 'data: \n\n');
  t.equal(formatFrame('x', null, '7'), 'id: 7\ndata: x\n\n', 'an id');
  t.equal(formatFrame('x', 'delta', '7'), 'event: delta\nid: 7\ndata: x\n\n');
  t.same(whole(formatFrame('a\nb', 'e', '42')), [frame('a\nb', 'e', '42')], 'with an id: round-trips');
});

t.test('formatFrame round-trips through the parser', async (t) => {
  const cases: [string, string | null][] = [
    ['[DONE]', null],
    [chunk('Hello'), null],
    [JSON.stringify({ text: 'line\nbreak and "quotes" and \\ and 👋' }), null],
    ['line one\nline two\n\nline four', null],
    ['', null],
    [' leading space', null],
    ['  two spaces', null],
    [': looks like a comment', null],
    ['data: nested', null],
    ['trailing newline\n', null],
    ['{"type":"message_start"}', 'message_start'],
    ['', 'ping'],
  ];
  for (const [data, event] of cases) {
    t.same(whole(formatFrame(data, event)), [frame(data, event)], JSON.stringify([data, event]));
  }
  const all = cases.map(([d, e]) => formatFrame(d, e)).join('');
  t.same(byteByByte(all), cases.map(([d, e]) => frame(d, e)), 'all of them back to back, byte by byte');
  t.same(whole(whole(STREAM).map((f) => formatFrame(f.data, f.event)).join('')), whole(STREAM), 'parse -> format -> parse is stable');
});

t.test('any mix of line ends, frame shapes and chunkings gives the frames that were written (fast-check)', async (t) => {
  const text = fc.string({ unit: fc.constantFrom('a', 'b', ' ', ':', '{', '"', 'é', '你', '😀') });
  const frameArb = fc.record({
    event: fc.option(fc.stringMatching(/^[a-z_]{1,8}$/), { nil: null }),
    id: fc.option(fc.stringMatching(/^[0-9]{1,4}$/), { nil: null }),
    data: fc.array(text, { minLength: 1, maxLength: 3 }),
    comment: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(frameArb, { minLength: 1, maxLength: 6 }), fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 8 }), (frames, eol, rawCuts) => {
      let stream = '';
      for (const f of frames) {
        if (f.comment) stream += `: ping${eol}`;
        if (f.event !== null) stream += `event: ${f.event}${eol}`;
        for (const line of f.data) stream += `data: ${line}${eol}`;
        if (f.id !== null) stream += `id: ${f.id}${eol}`;
        stream += eol;
      }
      const bytes = enc.encode(stream);
      const cuts = rawCuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b);
      const got = parseCut(bytes, cuts);
      const want = frames.map((f) => frame(f.data.join('\n'), f.event, f.id));
      return JSON.stringify(got) === JSON.stringify(want);
    }),
    { numRuns: 500, seed: 17 },
  );
  t.pass('500 generated streams parse back to their frames');
});

t.test('a frame in many chunks is taken whole once its blank line comes, and one too long is refused', async (t) => {
  // Before: every chunk of a frame without its blank line made the parser look through the whole buffer again (a
  // 32 MB frame held the event loop 11 s), and nothing bounded what it held.
  const p = new SseParser();
  const piece = enc.encode('x'.repeat(64 * 1024));
  let early = 0;
  early += p.push(enc.encode('data: {"a":"')).length;
  for (let i = 0; i < 200; i++) early += p.push(piece).length;
  t.equal(early, 0, 'no frame before its blank line');
  const frames = p.push(enc.encode('"}\n\n'));
  t.equal(frames.length, 1, 'the frame, once its blank line came');
  t.equal(frames[0]!.data.length, 200 * 64 * 1024 + 8, 'whole');
  const q = new SseParser();
  q.push(enc.encode('data: "'));
  t.throws(() => {
    for (let i = 0; i < 300; i++) q.push(piece);
  }, { code: 'TOLLGATE_ERR_UPSTREAM_PROTOCOL' }, `past ${MAX_FRAME_CHARS} characters without a blank line: refused`);
  const r = new SseParser();
  t.same(r.push(enc.encode('data: a\n')), [], 'half a blank line');
  t.same(r.push(enc.encode('\ndata: b\r')).map((f) => f.data), ['a'], 'a blank line split over two chunks is seen');
  t.same(r.push(enc.encode('\r')).map((f) => f.data), ['b'], 'and a \\r\\r one');
});

t.test('WholeFrames: any chunking gives the bytes back, each part ending where SseParser ends a frame', async (t) => {
  const frame = fc.tuple(
    fc.array(fc.oneof(fc.constant('data: {"a":"é☃"}'), fc.constant('event: x'), fc.constant(': ping'), fc.string({ maxLength: 12 }).map((s) => `data: ${s.replace(/[\r\n]/g, '')}`)), { minLength: 1, maxLength: 3 }),
    fc.constantFrom('\n', '\r\n', '\r'),
  ).map(([lines, eol]) => lines.join(eol) + eol + eol);
  fc.assert(
    fc.property(fc.array(frame, { maxLength: 6 }), fc.string({ maxLength: 20 }).map((s) => s.replace(/[\r\n]/g, '')), fc.array(fc.nat(), { maxLength: 12 }), (frames, cut, splits) => {
      const bytes = Buffer.from(frames.join('') + cut, 'utf8');
      const points = [...new Set(splits.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
      const chunks: Buffer[] = [];
      let at = 0;
      for (const p of [...points, bytes.length]) {
        chunks.push(bytes.subarray(at, p));
        at = p;
      }
      const w = new WholeFrames();
      const parser = new SseParser();
      const parts: Buffer[] = [];
      let parsedFrames = 0;
      for (const c of chunks) {
        parsedFrames += parser.push(c).length;
        const out = w.push(c);
        if (out !== null) {
          parts.push(out);
          // what went out so far is exactly what the parser has ended frames in: parsing it alone gives the same frames
          const again = new SseParser();
          t.equal(again.push(Buffer.concat(parts)).length, parsedFrames);
        }
      }
      const rest = w.rest();
      t.same(Buffer.concat([...parts, rest]), bytes, 'nothing lost or reordered');
      t.equal(Buffer.concat(parts).length, Buffer.byteLength(frames.join(''), 'utf8'), 'the parts end at the last whole frame; the cut one is the rest');
      t.same(rest, Buffer.from(cut, 'utf8'));
    }),
    { numRuns: 300 },
  );
});

t.test('WholeFrames: a blank line of mixed line ends goes on at once (not held to the stream\'s end)', async (t) => {
  for (const sep of ['\r\n\n', '\n\r\n']) {
    const w = new WholeFrames();
    t.equal(w.push(Buffer.from(`data: {"a":1}${sep}data: {"b"`))?.toString(), `data: {"a":1}${sep}`, JSON.stringify(sep));
    t.equal(w.rest().toString(), 'data: {"b"');
  }
});

t.test('blocks: their texts joined are the stream as it came, at any chunking, each with the frame push gives', async (t) => {
  const text = ': hi\r\nretry: 10\r\n\r\nid: 1\r\nevent: e\r\ndata: a\r\ndata: b\r\n\r\n\n\ndata: c\rid: 2\r\r: x\n\ndata: d\n\r\ndata: tail';
  const bytes = Buffer.from(text);
  for (let size = 1; size <= bytes.length; size++) {
    const p = new SseParser();
    const blocks = [];
    for (let i = 0; i < bytes.length; i += size) blocks.push(...p.blocks(bytes.subarray(i, i + size)));
    blocks.push(...p.blocks(null));
    if (blocks.map((b) => b.raw).join('') !== text) {
      t.fail(`chunks of ${size}: the texts joined differ`);
      return;
    }
    t.same(blocks.flatMap((b) => (b.frame === null ? [] : [b.frame])), [
      { event: 'e', data: 'a\nb', id: '1' }, { event: null, data: 'c', id: '2' }, { event: null, data: 'd', id: null }, { event: null, data: 'tail', id: null },
    ], `chunks of ${size}: the frames`);
  }
});
