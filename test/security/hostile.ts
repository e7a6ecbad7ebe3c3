// Generators of hostile input for the fuzz suite (fuzz.test.ts): request bodies that start from a valid body of
// each wire format and then break it (wrong types for known fields, prototype names, huge numbers, odd unicode),
// header sets, paths and query strings. Every generated value is plain data, so that fast-check's counterexample
// prints as something one can paste into a curl command.

import fc from 'fast-check';

/** Nesting cap of the random JSON values (deep nesting has its own explicit case). */
export const MAX_DEPTH = 50;

/** Every configured kind of target (the fuzz suite's providers and combo), with and without a thinking level. */
export const GOOD_MODELS = [
  'demo/echo-1', 'oa/gpt-4o', 'oa/org/model-with/slashes', 'an/claude-sonnet-4-5', 'an/claude-haiku-4-5', 'gm/gemini-2.5-flash',
  'gm/gemini-3-pro-preview', 'rs/o4-mini', 'rs/gpt-4.1', 'duo', 'open/anything',
  'demo/echo-1(high)', 'an/claude-sonnet-4-5(max)', 'gm/gemini-3-pro-preview(low)', 'gm/gemini-2.5-flash(8000)', 'rs/o4-mini(medium)',
  'oa/gpt-4o(none)', 'an/claude-sonnet-4-5(0)',
] as const;
/** Names that probe lookups and the suffix parser. */
export const MODELS = [
  ...GOOD_MODELS, '__proto__/x', 'constructor/x', 'hasOwnProperty/x', 'toString/x', 'valueOf/x', 'demo/__proto__', 'demo/constructor',
  'oa/__proto__', 'an/constructor', 'gm/toString', 'rs/hasOwnProperty', '__proto__', 'constructor', 'toString',
  'demo/', '/x', '/', 'x(', 'x(high)', 'demo/echo-1(', 'demo/echo-1()', 'demo/echo-1(__proto__)', 'demo/echo-1(constructor)',
  'demo/echo-1)(', '((', '', ' ', 'demo/echo-1\n', '\u0000', '%', '%25', '..', '../demo/echo-1', 'demo/echo-1'.repeat(500),
  '\ud800', 'démo/écho', '🙂/🙂',
] as const;

/** Prototype-chain names, as keys or as `type` strings. */
const PROTO = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf', 'prototype'] as const;

const hostileString = fc.constantFrom(
  '', ' ', 'NaN', 'Infinity', '-Infinity', '-0', '1e999', '0x10', 'null', 'true', '[]', '{}', '\u0000', '\ud800', '\udfff',
  '🙂', 'é'.repeat(100), '\u202e', 'x'.repeat(20_000), 'data:', 'data:;base64,', 'data:image/png;base64,@@@', 'data:image/png;base64,aGk=',
  'http://', 'https://x/a.__proto__', 'gs://b/o.constructor', 'file:///etc/passwd', ...PROTO,
);
const hostileNumber = fc.constantFrom(0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, -(2 ** 53) - 1, 4294967296, 5e-324, 1e21);

/** A JSON value that is wrong almost everywhere, plus random JSON (nesting capped at MAX_DEPTH). */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom<unknown>(null, true, false, [], [null], {}, [[]], [{}]), weight: 3 },
  { arbitrary: hostileNumber, weight: 2 },
  { arbitrary: hostileString, weight: 3 },
  { arbitrary: fc.constantFrom(...PROTO).map((k) => JSON.parse(`{"${k}":{"x":1},"type":"${k}"}`) as unknown), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 4 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 1 },
  { arbitrary: fc.integer({ min: 1, max: MAX_DEPTH }).map((d) => nest(d)), weight: 1 },
);

function nest(depth: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
}

const partTypes = {
  chat: ['text', 'image_url', 'input_audio', 'file', 'refusal', 'tool_use', ...PROTO],
  anthropic: ['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use', ...PROTO],
  responses: ['message', 'input_text', 'input_image', 'input_file', 'input_audio', 'function_call', 'function_call_output', 'reasoning', ...PROTO],
} as const;

/** Values that pass validation, so that translation and rendering run too. */
const plausible = fc.constantFrom<unknown>(
  'hi', 'call_1', 'get_weather', '{"city":"Paris"}', { city: 'Paris' }, { url: 'data:image/png;base64,aGk=' }, { url: 'https://x/a.png', detail: 'low' },
  { data: 'aGk=', format: 'wav' }, { type: 'base64', media_type: 'image/png', data: 'aGk=' }, { type: 'url', url: 'https://x/a.pdf' },
  { file_data: 'data:application/pdf;base64,aGk=', filename: 'a.pdf' }, [{ type: 'text', text: 'hi' }], { type: 'object', properties: {} },
);
const partValue = fc.oneof({ arbitrary: plausible, weight: 3 }, { arbitrary: hostileValue, weight: 2 });
/** A content part (or item) of one format: a type, plus any of the fields parts carry, each maybe hostile. */
function part(types: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(
    {
      type: fc.oneof(fc.constantFrom(...types), hostileValue),
      text: partValue, image_url: partValue, input_audio: partValue, file: partValue, source: partValue, content: partValue,
      input: partValue, id: partValue, name: partValue, tool_use_id: partValue, arguments: partValue, call_id: partValue,
      output: partValue, role: fc.constantFrom<unknown>('user', 'assistant', 'system', 'tool', 'developer', 'model', ...PROTO, null, 1),
      image_url_detail: partValue, format: fc.constantFrom<unknown>('wav', 'mp3', ...PROTO, 1, null), thinking: partValue, signature: partValue,
    },
    { requiredKeys: ['type'] },
  );
}

const geminiPart = fc.record(
  {
    text: partValue, thought: fc.constantFrom<unknown>(true, false, 'yes', null), thoughtSignature: partValue,
    inlineData: fc.oneof(partValue, fc.record({ mimeType: fc.oneof(hostileString, fc.constantFrom('image/png', 'audio/wav', 'application/pdf')), data: partValue })),
    fileData: fc.oneof(partValue, fc.record({ mimeType: fc.oneof(hostileString, fc.constant('image/png')), fileUri: hostileString })),
    functionCall: fc.oneof(partValue, fc.record({ name: partValue, args: partValue, id: partValue })),
    functionResponse: fc.oneof(partValue, fc.record({ name: partValue, response: partValue, id: partValue })),
  },
  { requiredKeys: [] },
);

export type Format = 'chat' | 'messages' | 'count_tokens' | 'responses' | 'gemini';

/** A valid body of each format (the model goes in the path for Gemini). */
export function validBody(format: Format, model: string): Record<string, unknown> {
  switch (format) {
    case 'chat':
      return { model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
    case 'messages':
    case 'count_tokens':
      return { model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
    case 'responses':
      return { model, max_output_tokens: 16, input: 'hi' };
    case 'gemini':
      return { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 16 } };
  }
}

type Path = readonly (string | number)[];
/** The fields each format knows, as paths into its body; a mutation writes a hostile value at one of them. */
const FIELDS: Readonly<Record<Format, readonly Path[]>> = {
  chat: [
    ['model'], ['messages'], ['messages', 0], ['messages', 0, 'role'], ['messages', 0, 'content'], ['messages', 0, 'content', 0],
    ['messages', 0, 'tool_calls'], ['messages', 0, 'tool_calls', 0, 'function'], ['messages', 0, 'name'], ['messages', 1],
    ['stream'], ['stream_options'], ['stream_options', 'include_usage'], ['max_tokens'], ['max_completion_tokens'], ['n'],
    ['temperature'], ['top_p'], ['stop'], ['tools'], ['tools', 0], ['tools', 0, 'function'], ['tools', 0, 'function', 'parameters'],
    ['tool_choice'], ['response_format'], ['response_format', 'type'], ['response_format', 'json_schema'], ['reasoning_effort'],
    ['user'], ['seed'], ['logit_bias'], ['__proto__'], ['constructor'],
  ],
  messages: [
    ['model'], ['messages'], ['messages', 0], ['messages', 0, 'role'], ['messages', 0, 'content'], ['messages', 0, 'content', 0],
    ['messages', 1], ['system'], ['system', 0], ['max_tokens'], ['stream'], ['tools'], ['tools', 0], ['tools', 0, 'input_schema'],
    ['tool_choice'], ['thinking'], ['thinking', 'type'], ['thinking', 'budget_tokens'], ['temperature'], ['top_k'],
    ['stop_sequences'], ['metadata'], ['__proto__'],
  ],
  count_tokens: [['model'], ['messages'], ['messages', 0, 'content'], ['messages', 0, 'content', 0], ['system'], ['tools'], ['thinking']],
  responses: [
    ['model'], ['input'], ['input', 0], ['input', 0, 'content'], ['input', 0, 'content', 0], ['input', 0, 'type'], ['instructions'],
    ['stream'], ['max_output_tokens'], ['tools'], ['tools', 0], ['tools', 0, 'parameters'], ['tool_choice'], ['reasoning'],
    ['reasoning', 'effort'], ['text'], ['text', 'format'], ['previous_response_id'], ['store'], ['include'], ['__proto__'],
  ],
  gemini: [
    ['contents'], ['contents', 0], ['contents', 0, 'role'], ['contents', 0, 'parts'], ['contents', 0, 'parts', 0], ['contents', 1],
    ['systemInstruction'], ['systemInstruction', 'parts'], ['generationConfig'], ['generationConfig', 'maxOutputTokens'],
    ['generationConfig', 'thinkingConfig'], ['generationConfig', 'thinkingConfig', 'thinkingBudget'],
    ['generationConfig', 'thinkingConfig', 'thinkingLevel'], ['generationConfig', 'responseSchema'], ['generationConfig', 'responseMimeType'],
    ['generationConfig', 'stopSequences'], ['tools'], ['tools', 0, 'functionDeclarations'], ['tools', 0, 'functionDeclarations', 0],
    ['toolConfig'], ['safetySettings'], ['__proto__'],
  ],
};

const PART: Readonly<Record<Format, fc.Arbitrary<unknown>>> = {
  chat: part(partTypes.chat),
  messages: part(partTypes.anthropic),
  count_tokens: part(partTypes.anthropic),
  responses: part(partTypes.responses),
  gemini: geminiPart,
};

/** A deep copy that keeps own '__proto__' keys (JSON.parse defines them as own properties). */
const copy = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** Write `value` at `path`, creating objects and arrays on the way (own properties, even for '__proto__'). */
function setAt(root: Record<string, unknown>, path: Path, value: unknown): void {
  let at: Record<string | number, unknown> = root;
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      Object.defineProperty(at, key, { value, enumerable: true, writable: true, configurable: true });
      return;
    }
    let next = Object.hasOwn(at, key) ? at[key] : undefined;
    if (typeof next !== 'object' || next === null) {
      next = typeof path[i + 1] === 'number' ? [] : {};
      Object.defineProperty(at, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
    at = next as Record<string | number, unknown>;
  });
}

export interface BodyCase {
  readonly format: Format;
  readonly model: string;
  readonly stream: boolean;
  /** The JSON text sent. */
  readonly body: string;
}

const mutation = (format: Format) =>
  fc.tuple(
    fc.constantFrom(...FIELDS[format]),
    fc.oneof({ arbitrary: hostileValue, weight: 3 }, { arbitrary: PART[format], weight: 2 }, { arbitrary: plausible, weight: 2 }),
  );

/** A body of `format`: valid, then 0 to 3 fields overwritten; or, now and then, any JSON value at all. */
export function bodyCase(format: Format): fc.Arbitrary<BodyCase> {
  return fc
    .record({
      model: fc.oneof({ arbitrary: fc.constantFrom(...GOOD_MODELS), weight: 2 }, { arbitrary: fc.constantFrom(...MODELS), weight: 1 }),
      stream: fc.boolean(),
      mutations: fc.oneof(fc.constant([]), fc.array(mutation(format), { maxLength: 3 })),
      parts: fc.array(PART[format], { maxLength: 3 }),
      // One body in ten is replaced by any JSON value at all.
      whole: fc.oneof({ arbitrary: fc.constant(null), weight: 9 }, { arbitrary: fc.oneof(hostileValue, fc.jsonValue({ maxDepth: MAX_DEPTH })), weight: 1 }),
    })
    .map(({ model, stream, mutations, parts, whole }) => {
      const body = validBody(format, model);
      if (stream && format !== 'gemini') body.stream = true;
      // Content parts in the place each format puts them.
      if (parts.length > 0) {
        if (format === 'gemini') setAt(body, ['contents', 0, 'parts'], copy(parts));
        else if (format === 'responses') setAt(body, ['input'], copy(parts));
        else setAt(body, ['messages', 0, 'content'], copy(parts));
      }
      // Copies: fast-check hands out the same object for a constant, and a later mutation may write into an earlier one.
      for (const [path, value] of mutations) setAt(body, path, copy(value));
      return { format, model, stream, body: JSON.stringify(whole === null ? body : whole) ?? 'null' };
    });
}

/** Percent-encode every byte outside a small safe set (lone surrogates become U+FFFD, as UTF-8 has no form for them). */
export function pathEncode(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9/._~()-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('');
}

/** Fragments of hostile URLs: bad and overlong percent-encodings, dot segments, prototype names. */
const URL_BITS = [
  '%', '%2', '%25', '%00', '%ff', '%c0%af', '%e0%80%af', '%ed%a0%80', '%2e%2e', '%2F', '%5C', '..', '.', '', '\\', ';', '*', '~', '+', '[]', '[x]',
  '__proto__', 'constructor', 'x'.repeat(3000), 'é', '🙂', '\u00ff',
] as const;
const PATH_BITS = [
  ...URL_BITS, 'v1', 'v1beta', 'api', 'models', 'chat', 'completions', 'messages', 'count_tokens', 'responses', 'usage', 'quota', 'alerts',
  'budgets', 'health', 'ready', 'metrics', 'demo', 'echo-1:generateContent', 'gm%2Fgemini-2.5-flash:streamGenerateContent', ':generateContent',
] as const;

/** A path of 1 to 8 segments (maybe beginning with '//'), as raw bytes on the request line. */
export const hostilePath: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom('/', '//', '/v1beta/models/', '/api/', '/v1/'), fc.array(fc.constantFrom(...PATH_BITS), { minLength: 1, maxLength: 8 }))
  .map(([head, segs]) => head + segs.join('/'))
  .map((p) => Buffer.from(p, 'utf8').toString('latin1'));

const QUERY_KEYS = [
  'period', 'from', 'to', 'tz', 'provider', 'model', 'group_by', 'by', 'limit', 'offset', 'cursor', 'include_keepalive', 'status',
  'kind', 'key', 'unread', 'since', 'combo', 'alt', 'endpoint', 'api_key', 'q', ...URL_BITS,
] as const;
const QUERY_VALUES = [
  ...URL_BITS, 'day', 'week', 'month', 'today', '2024-01-01', '2024-02-30', '1969-12-31', '9999-12-31T23:59:59Z', '0', '-1',
  '999999999999', 'true', 'false', 'UTC', 'Europe/Paris', 'Not/AZone', 'demo', 'demo/echo-1', 'sse', 'tg-key', 'x'.repeat(10_000),
] as const;

/** A query string: repeated keys, empty and missing values, bad encodings, huge values. */
export const hostileQuery: fc.Arbitrary<string> = fc
  .array(
    fc.tuple(fc.constantFrom(...QUERY_KEYS), fc.option(fc.array(fc.constantFrom(...QUERY_VALUES), { maxLength: 2 }), { freq: 5 })),
    { maxLength: 5 },
  )
  .map((pairs) => pairs.map(([k, v]) => (v === null ? k : `${k}=${v.join('')}`)).join('&'))
  .map((q) => Buffer.from(q, 'utf8').toString('latin1'));

/** Header sets: content-type variants, garbage and repeated credentials, odd framing-free extras. */
export const hostileHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    fc.tuple(
      fc.constant('content-type'),
      fc.constantFrom(
        'application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'APPLICATION/JSON', 'application/jsonx',
        'application/json;;', 'application/json, text/plain', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
        'application/octet-stream', '', ';', '*/*', 'application/problem+json', 'application/json; charset=utf-16',
      ),
    ),
    fc.tuple(
      fc.constantFrom('authorization', 'x-api-key', 'x-goog-api-key'),
      fc.constantFrom('Bearer', 'Bearer ', 'Bearer a b', 'Basic Zm9vOmJhcg==', 'bearer tg-fuzz-key', '\u00ff\u00fe', 'x'.repeat(8000), '', ' ', 'null', '__proto__'),
    ),
    fc.tuple(
      fc.constantFrom('accept', 'accept-encoding', 'accept-version', 'x-request-id', 'origin', 'content-encoding', 'anthropic-version', 'x-forwarded-for', 'cookie', 'expect'),
      fc.constantFrom('*/*', 'text/event-stream', 'gzip', 'br;q=x', '1.x', '%%%', '\u00ff', '__proto__', 'x'.repeat(4000), '', '100-continue', '1.2.3.4, ::1, garbage'),
    ),
  ),
  { maxLength: 6 },
);
