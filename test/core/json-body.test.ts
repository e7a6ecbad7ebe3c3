// The application/json parser (src/core/json-body.ts): the nesting limit (server.json_max_depth) refused before parsing
// with the one error shape, brackets inside strings not counted, and fastify's checks kept (empty, invalid,
// prototype poisoning, body limit) on a real socket; integers past 2^53 and -0 kept as written for the serialiser.

import t from 'tap';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { MAX_KEPT_NUMBERS, jsonDepth, parseJsonBody } from '../../src/core/json-body.js';
import { holdsRawNumbers, rawNumberText } from '../../src/core/raw-numbers.js';
import { jsonBody } from '../../src/wire/json-stream.js';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';

const depth = (s: string) => jsonDepth(Buffer.from(s));

t.test('jsonDepth counts nested arrays and objects, not brackets inside strings', async (t) => {
  t.equal(depth('1'), 0);
  t.equal(depth('{}'), 1);
  t.equal(depth('[[],[[]],{}]'), 3);
  t.equal(depth('{"a":{"b":[1,{"c":2}]}}'), 4);
  t.equal(depth('{"a":"[[[[{{{{"}'), 1, 'brackets in a string value');
  t.equal(depth('{"[[[[":1}'), 1, 'brackets in a key');
  t.equal(depth('["\\"[[[", "\\\\", [1]]'), 2, 'escaped quotes and an escaped backslash before the closing quote');
  t.equal(depth('["\\\\\\"[[["]'), 1, 'three backslashes then a quote: still inside the string');
  t.equal(depth('["é[ü", ["日本"]]'), 2, 'multi-byte UTF-8 inside strings');
  t.equal(depth(`${'['.repeat(10_000)}`), 10_000, 'unbalanced: the deepest opening counts');
  t.equal(depth(`${'['.repeat(10_000)}`.padEnd(10_000)), 10_000);
  t.equal(jsonDepth(Buffer.from('['.repeat(10_000)), 128), 129, 'stops as soon as it passes max');
  t.equal(depth('["unterminated [[['), 1, 'an unterminated string ends the scan');
});

t.test('parseJsonBody: depth checked first, empty and invalid bodies keep fastify codes', async (t) => {
  t.same(parseJsonBody(Buffer.from('\uFEFF{"a":[1]}'), 8), { a: [1] }, 'a leading BOM is skipped');
  t.throws(() => parseJsonBody(Buffer.alloc(0), 8), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY' });
  t.throws(() => parseJsonBody(Buffer.from('{"a":'), 8), { code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
  t.throws(() => parseJsonBody(Buffer.from('{"__proto__":{"x":1}}'), 8), { code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
  t.throws(() => parseJsonBody(Buffer.from(`${'['.repeat(9)}${']'.repeat(9)}`), 8), {
    code: 'TOLLGATE_ERR_BAD_REQUEST', status: 400, message: 'JSON nesting deeper than server.json_max_depth (8)',
  });
  // large enough to be released: the caller's Buffer is detached once decoded
  const big = Buffer.allocUnsafeSlow(2 * 1024 * 1024).fill(0x20);
  big.write('{"a":"x"}', 0);
  t.same(parseJsonBody(big, 8), { a: 'x' });
  t.equal(big.length, 0, 'a large body is released once it is text');
});

const up = await startFakeOpenAI(t);
const LIMIT = 100_000;
const gw = await startApp(t, { server: { json_max_depth: 16, body_limit_bytes: LIMIT }, providers: { demo: DEMO_PROVIDER, fake: fakeProvider(up.baseUrl) } });
const post = (body: string, path = '/v1/chat/completions') =>
  request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
const nested = (n: number, open: string, close: string, inner = '1') => `${open.repeat(n)}${inner}${close.repeat(n)}`;
/** A chat request whose messages[0].metadata nests `extra` more levels (the envelope itself is 3 deep). */
const chatWith = (extra: string) => `{"model":"demo/echo-1","messages":[{"role":"user","content":"hi","metadata":${extra}}]}`;

async function errorOf(res: Awaited<ReturnType<typeof request>>) {
  const body = (await res.body.json()) as { error: Record<string, unknown> };
  return { status: res.statusCode, body };
}

t.test('nesting at the limit is served; one deeper is 400 TOLLGATE_ERR_BAD_REQUEST naming the limit', async (t) => {
  for (const [open, close, kind] of [['[', ']', 'arrays'], ['{"k":', '}', 'objects']] as const) {
    const atLimit = await post(chatWith(nested(16 - 3, open, close)));
    t.equal(atLimit.statusCode, 200, `${kind}: 16 levels are accepted`);
    await atLimit.body.dump();
    const over = await errorOf(await post(chatWith(nested(16 - 3 + 1, open, close))));
    t.equal(over.status, 400, `${kind}: 17 levels are refused`);
    t.strictSame(Object.keys(over.body.error).sort(), ['code', 'message', 'param', 'request_id', 'type']);
    t.match(over.body.error, {
      code: 'TOLLGATE_ERR_BAD_REQUEST', type: 'invalid_request_error', param: null,
      message: 'JSON nesting deeper than server.json_max_depth (16)',
    });
  }
});

t.test('brackets inside strings do not count toward the depth', async (t) => {
  const res = await post(chatWith(JSON.stringify({ note: '[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{{{{{{{{{{{', '[[[[[[[[[[[[[[[[[[[[': '\\"[[[[[[[[[[[[[[[[[[' })));
  t.equal(res.statusCode, 200);
  await res.body.dump();
});

t.test('10,000-deep JSON is refused with a 400, and the gateway serves the next request', async (t) => {
  for (const [open, close] of [['[', ']'], ['{"a":', '}']] as const) {
    const deep = await errorOf(await post(chatWith(nested(10_000, open, close))));
    t.equal(deep.status, 400);
    t.equal(deep.body.error.code, 'TOLLGATE_ERR_BAD_REQUEST');
    // also when the body is not a chat request at all, and on the forwarding route
    const bare = await errorOf(await post(nested(10_000, open, close)));
    t.equal(bare.body.error.code, 'TOLLGATE_ERR_BAD_REQUEST');
  }
  const forwarded = await errorOf(await post(`{"model":"fake/gpt-4o-mini","messages":[{"role":"user","content":"hi","x":${nested(10_000, '[', ']')}}]}`));
  t.equal(forwarded.body.error.code, 'TOLLGATE_ERR_BAD_REQUEST');
  t.equal(up.received.length, 0, 'nothing deep reached the upstream');
  const after = await post(chatWith('{}'));
  t.equal(after.statusCode, 200);
  await after.body.dump();
});

t.test('prototype poisoning, empty and invalid bodies keep their codes', async (t) => {
  for (const body of ['{"model":"demo/echo-1","messages":[],"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}},"model":"demo/echo-1","messages":[]}', '{"model":"demo/echo-1","messages":[{"role":"user","content":"hi","\\u005f_proto__":{}}]}']) {
    const res = await errorOf(await post(body));
    t.equal(res.status, 400, body);
    t.equal(res.body.error.code, 'TOLLGATE_ERR_INVALID_JSON');
  }
  t.equal((await errorOf(await post(''))).body.error.code, 'TOLLGATE_ERR_INVALID_JSON', 'empty body');
  t.equal((await errorOf(await post('{"model":'))).body.error.code, 'TOLLGATE_ERR_INVALID_JSON', 'truncated body');
  const text = await post('{"model":"demo/echo-1","messages":[{"role":"user","content":"__proto__ is fine as text"}]}');
  t.equal(text.statusCode, 200, '__proto__ inside a string value is not a key');
  await text.body.dump();
});

t.test('the body limit is still a 413, with or without a content-length', async (t) => {
  const small = gw;
  const big = chatWith(JSON.stringify('x'.repeat(LIMIT)));
  const withLength = await request(`${small.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
  t.equal(withLength.statusCode, 413);
  t.equal(((await withLength.body.json()) as { error: { code: string } }).error.code, 'TOLLGATE_ERR_BODY_TOO_LARGE');
  const chunked = await request(`${small.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: Readable.from((async function* () {
      for (let i = 0; i < 4; i++) yield Buffer.from(big.slice(i * 30_000, (i + 1) * 30_000));
    })()),
  });
  t.equal(chunked.statusCode, 413);
  t.equal(((await chunked.body.json()) as { error: { code: string } }).error.code, 'TOLLGATE_ERR_BODY_TOO_LARGE');
  // a chunked body split inside a multi-byte character is decoded whole
  const utf8 = Buffer.from(chatWith('{"k":"é日本"}'));
  const cut = utf8.indexOf(Buffer.from('日')) + 1;
  const fits = await request(`${small.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' },
    body: Readable.from((async function* () {
      yield utf8.subarray(0, cut);
      yield utf8.subarray(cut);
    })()),
  });
  t.equal(fits.statusCode, 200);
  await fits.body.dump();
});

t.test('a body that is not as long as its content-length says is a 400 BAD_REQUEST, not "must be application/json"', async (t) => {
  const { errorCodes } = await import('fastify');
  const { toTollgateError } = await import('../../src/core/errors.js');
  const e = toTollgateError(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
  t.match(e, { code: 'TOLLGATE_ERR_BAD_REQUEST', status: 400, message: /content-length/ });
  t.match(toTollgateError(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE()), { code: 'TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE', status: 415 });
});

// A number JSON cannot write back (1e400 is Infinity, which JSON.stringify writes as null) was sent on as null: a
// request the provider would refuse (`temperature: 1e400`) reached it as one that takes the default.
t.test('a number too large to represent is a 400, not sent on as null; large but finite ones and such text are served', async (t) => {
  for (const n of ['1e400', '-1E+999', '9'.repeat(400), `1${'0'.repeat(250)}e99`, `${'9'.repeat(308)}.5e1`]) {
    t.throws(() => parseJsonBody(Buffer.from(`{"temperature":${n},"a":[1]}`), 64), { code: 'TOLLGATE_ERR_INVALID_REQUEST' }, n);
    const res = await errorOf(await post(`{"model":"demo/echo-1","temperature":${n},"messages":[{"role":"user","content":"hi"}]}`));
    t.equal(res.status, 400, `${n}: a 400`);
    t.match(res.body.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', message: /too large to represent/ });
  }
  t.same(parseJsonBody(Buffer.from('{"a":1e300,"b":"e999 and 1e400 as text","c":[1.5e-400]}'), 64), { a: 1e300, b: 'e999 and 1e400 as text', c: [0] }, 'finite numbers and text pass');
  const deep = `${'['.repeat(10_000)}1e400${']'.repeat(10_000)}`;
  t.throws(() => parseJsonBody(Buffer.from(deep), 10_000), { code: 'TOLLGATE_ERR_INVALID_REQUEST' }, 'found at the deepest nesting allowed (no stack overflow)');
  const ok = await post('{"model":"demo/echo-1","messages":[{"role":"user","content":"1e400 as text"}]}');
  t.equal(ok.statusCode, 200, 'the same characters in a string are text');
  await ok.body.dump();
});

t.test('numbers JavaScript would change keep their literal for the serialiser; the values stay numbers', async (t) => {
  const text = '{"seed":9007199254740993,"max_tokens":100000000000000000000,"a":[-0,-0.0,1.5e-400,12345678901234567.5,-0.5],"s":"9007199254740993 -0","n":1.0}';
  const body = parseJsonBody(Buffer.from(text), 64) as Record<string, unknown>;
  t.equal(body.seed, 9007199254740992, 'the value is the nearest number: what the checks read');
  t.equal(typeof body.max_tokens, 'number', 'a max_tokens past 2^53 is still a number');
  t.equal(body.s, '9007199254740993 -0', 'text is text');
  t.ok(holdsRawNumbers(body));
  t.equal(rawNumberText(body, 'seed', 9007199254740992), '9007199254740993');
  t.equal(rawNumberText(body, 'seed', 5), undefined, 'a value the gateway changed is written anew');
  const sent = (b: unknown) => Buffer.concat([jsonBody(b)].flatMap((x) => (Buffer.isBuffer(x) ? [x] : [...x]))).toString();
  t.equal(sent(body), '{"seed":9007199254740993,"max_tokens":100000000000000000000,"a":[-0,-0.0,0,12345678901234567.5,-0.5],"s":"9007199254740993 -0","n":1}', 'written back as the client wrote them (a number too small to represent is 0, as before)');
  body.max_tokens = 4096;
  t.match(sent(body), '"max_tokens":4096', 'a clamp wins');

  const plain = parseJsonBody(Buffer.from('{"seed":42,"t":-0.5,"d":"2024-06-01"}'), 64);
  t.notOk(holdsRawNumbers(plain), 'an ordinary body is parsed as before, unmarked');

  // A client string cannot be taken for a kept number: the placeholder holds this process's random nonce.
  const forged = parseJsonBody(Buffer.from('{"a":9007199254740993,"b":"\\u0000tollgate-number-00000000000000000000000000000000-0"}'), 64) as Record<string, unknown>;
  t.equal(typeof forged.b, 'string', 'a look-alike placeholder stays a string');
  for (const n of [`1${'0'.repeat(400)}`, `-${'9'.repeat(400)}`]) {
    t.throws(() => parseJsonBody(Buffer.from(`{"seed":9007199254740993,"t":${n}}`), 64), { code: 'TOLLGATE_ERR_INVALID_REQUEST' }, `${n.slice(0, 5)}...: still too large`);
  }
  t.throws(() => parseJsonBody(Buffer.from('{"a":01234567890123456789}'), 64), { code: 'FST_ERR_CTP_INVALID_JSON_BODY' }, 'an invalid literal stays invalid');
  const deep = parseJsonBody(Buffer.from(`${'['.repeat(10_000)}9007199254740993${']'.repeat(10_000)}`), 10_000);
  t.match(sent(deep), /\[9007199254740993\]/, 'at the deepest nesting allowed');
});

t.test('at most MAX_KEPT_NUMBERS literals are kept: a body of many is parsed once, its values rounded as before', async (t) => {
  // A body of a million `-0` took 11 times the time and memory of its first parse, with a placeholder each in a
  // second parse (review s12c): past the cap nothing is kept, and the body is what the first parse made.
  const sent = (b: unknown) => Buffer.concat([jsonBody(b)].flatMap((x) => (Buffer.isBuffer(x) ? [x] : [...x]))).toString();
  const at = parseJsonBody(Buffer.from(`{"a":[${Array(MAX_KEPT_NUMBERS).fill('-0').join(',')}]}`), 64);
  t.ok(holdsRawNumbers(at), `${MAX_KEPT_NUMBERS}: kept`);
  t.equal(sent(at), `{"a":[${Array(MAX_KEPT_NUMBERS).fill('-0').join(',')}]}`);
  const past = parseJsonBody(Buffer.from(`{"a":[${Array(MAX_KEPT_NUMBERS + 1).fill('-0').join(',')}]}`), 64);
  t.notOk(holdsRawNumbers(past), `${MAX_KEPT_NUMBERS + 1}: none kept`);
  t.equal(sent(past), `{"a":[${Array(MAX_KEPT_NUMBERS + 1).fill('0').join(',')}]}`, 'written as parsed');
  const many = parseJsonBody(Buffer.from(`{"seed":9007199254740993,"a":[${Array(1_000_000).fill('-0').join(',')}]}`), 64);
  t.notOk(holdsRawNumbers(many), 'a million: none kept');
  // Duplicate keys: the tree holds fewer than the text; the text's count decides.
  const dup = parseJsonBody(Buffer.from(`{${Array.from({ length: MAX_KEPT_NUMBERS + 1 }, () => '"k":-0').join(',')}}`), 64);
  t.notOk(holdsRawNumbers(dup), 'more literals in the text than the cap, one in the tree: none kept');
  // Large numbers JavaScript writes back as they were (1e20) are not literals to keep, and do not count (review s12g).
  const exact = parseJsonBody(Buffer.from(`{"seed":18446744073709551615,"b":[${Array(200).fill('1e20').join(',')}]}`), 64);
  t.ok(holdsRawNumbers(exact), 'one literal to keep beside 200 exact large numbers: kept');
  t.match(sent(exact), /^\{"seed":18446744073709551615,/);
});

