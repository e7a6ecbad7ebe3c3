// The data set of the query benchmark (bench/queries.mjs): six providers with one quota kind each, four models per
// provider, two idle providers (in the config only), two combos, and the server-side SQL that fills `requests` with
// synthetic but internally consistent rows (the materialized view fills the hourly rollup as they go in). Shared by the
// data child and the app child, so the config the app runs with and the rows on disk name the same providers, models
// and combos.

export const DB = 'tollgate';
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Index 1 of every provider's models is its reasoning model (only it reports reasoning tokens). */
export const PROVIDERS = [
  {
    id: 'anthropic', group: 'subscription', price: { input: 3, output: 15, cached: 0.3 },
    models: ['claude-sonnet-4', 'claude-opus-4', 'claude-haiku-4', 'claude-sonnet-3-7'],
    quota: { kind: 'rolling_hours', limit: 50, window: '5h' },
  },
  {
    id: 'openai', group: 'paid', price: { input: 2.5, output: 10, cached: 1.25 },
    models: ['gpt-4o', 'o3', 'gpt-4o-mini', 'gpt-4.1'],
    quota: { kind: 'monthly_tokens', limit: 5_000_000_000 },
  },
  {
    id: 'gemini', group: 'free', price: { input: 1.25, output: 10, cached: 0.31 },
    models: ['gemini-2.5-flash', 'gemini-2.5-pro', 'gemini-2.5-flash-lite', 'gemini-2.0-flash'],
    quota: { kind: 'daily_requests', limit: 50_000, monthly_limit: 1_500_000 },
  },
  {
    id: 'zai', group: 'subscription', price: { input: 0.6, output: 2.2, cached: 0.11 },
    models: ['glm-4.5', 'glm-4.6', 'glm-4.5-air', 'glm-4.5v'],
    quota: { kind: 'daily_tokens', limit: 300_000_000, reset_time: '10:00+08:00' },
  },
  {
    id: 'kimi', group: 'subscription', price: { input: 0.6, output: 2.5, cached: 0.15 },
    models: ['kimi-k2', 'kimi-k2-thinking', 'moonshot-v1-32k', 'moonshot-v1-128k'],
    quota: { kind: 'rolling_tokens', limit: 50_000_000, window: '5h' },
  },
  {
    id: 'deepseek', group: 'paid', price: { input: 0.27, output: 1.1, cached: 0.07 },
    models: ['deepseek-chat', 'deepseek-reasoner', 'deepseek-v3.1', 'deepseek-v3.2'],
    quota: { kind: 'unlimited' },
  },
];

/**
 * Configured providers that no row names: a gateway usually has some (a free tier kept for a rainy day). Each is at 0%
 * of its quota, which asks the quota for its recent calls (the connection-problem flag): from the rollups' hours, with no
 * read of its own when there were none.
 */
export const IDLE_PROVIDERS = [
  { id: 'spare', group: 'free', quota: { kind: 'daily_tokens', limit: 1_000_000 } },
  { id: 'backup', group: 'paid', quota: { kind: 'rolling_tokens', limit: 10_000_000, window: '5h' } },
];

/** Two members each, as [provider index, model index]; attempt k of a combo request goes to member k. */
export const COMBOS = [
  { name: 'smart', strategy: 'fallback', members: [[1, 0], [0, 0]] },
  { name: 'cheap', strategy: 'round-robin', members: [[5, 0], [3, 2]] },
];

export const API_KEYS = ['admin', 'ci', 'alice', 'bob'];
/** Per-model price multiplier (model index 0..3). */
const MODEL_PRICE = [1, 2, 0.3, 1];

/** The Tollgate config for an app on `dataDir` (pass it through parseConfig). Mock providers: no upstream is called. */
export function benchConfig(dataDir) {
  return {
    server: { host: '127.0.0.1', port: 0 },
    storage: { data_dir: dataDir, database: DB },
    providers: Object.fromEntries(
      PROVIDERS.map((p) => [
        p.id,
        {
          name: p.id, group: p.group, format: 'mock', price: p.price, quota: p.quota,
          models: Object.fromEntries(p.models.map((m) => [m, { kind: 'llm' }])),
        },
      ]).concat(IDLE_PROVIDERS.map((p) => [p.id, { name: p.id, group: p.group, format: 'mock', quota: p.quota, models: { base: { kind: 'llm' } } }])),
    ),
    combos: Object.fromEntries(
      COMBOS.map((c) => [c.name, { strategy: c.strategy, models: c.members.map(([pi, mi]) => `${PROVIDERS[pi].id}/${PROVIDERS[pi].models[mi]}`) }]),
    ),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Row generation. Row n of numbers(): n % 20 = 0 is a combo request, 1 and 2 its two attempts (parent = row n - k),
// n % 100 = 3 a keep-alive ping, everything else a direct request. Every value is a hash of the row number, so a
// combo row can compute its attempts' buckets and cost (it carries their sums) and an attempt its parent's id.

const sqlArr = (xs) => `[${xs.map((x) => (typeof x === 'string' ? `'${x}'` : String(x))).join(', ')}]`;
const H = (x, k) => `cityHash64(${x}, ${k})`;
/** 1-based array element for a 0-based index expression. */
const at = (arr, i) => `${sqlArr(arr)}[(${i}) + 1]`;

/** A deterministic UUIDv7 (time-ordered, like the gateway's) for row `x` started at `tsMs`. */
function uuid7(x, tsMs) {
  const t = `leftPad(lower(hex(toUInt64(${tsMs}))), 12, '0')`;
  const r1 = `leftPad(lower(hex(${H(x, 13)})), 16, '0')`;
  const r2 = `leftPad(lower(hex(${H(x, 14)})), 16, '0')`;
  return `toUUID(concat(substring(${t}, 1, 8), '-', substring(${t}, 9, 4), '-7', substring(${r1}, 1, 3), '-8', substring(${r1}, 4, 3), '-', substring(${r2}, 1, 12)))`;
}

/** The SQL of one upstream call (a direct request, an attempt or a ping) at row `x` to provider `pi`, model `mi`. */
function call(x, pi, mi) {
  const roll = `(${H(x, 5)} % 1000)`;
  const status = `multiIf(${roll} < 970, 'success', ${roll} < 990, 'failure', 'aborted')`;
  const failed = `${roll} >= 970 AND ${roll} < 990`;
  const aborted = `${roll} >= 990`;
  const input = `if(${failed}, NULL, toUInt64(100 + ${H(x, 6)} % 6000))`;
  const cached = `if(${failed}, NULL, if(${H(x, 6)} % 3 = 0, toUInt64(intDiv(100 + ${H(x, 6)} % 6000, 2)), toUInt64(0)))`;
  const cacheWrite = `if(${failed} OR (${pi}) != 0, NULL, if(${H(x, 9)} % 5 = 0, toUInt64(200 + ${H(x, 9)} % 2000), toUInt64(0)))`;
  const outRaw = `toUInt64(20 + ${H(x, 10)} % 1500)`;
  const output = `if(${failed}, NULL, if(${aborted}, intDiv(${outRaw}, 3), ${outRaw}))`;
  const reasoning = `if(${failed} OR ${aborted} OR (${mi}) != 1, NULL, toUInt64(${H(x, 11)} % 3000))`;
  const total = `(ifNull(${input}, 0) + ifNull(${cached}, 0) + ifNull(${cacheWrite}, 0) + ifNull(${output}, 0) + ifNull(${reasoning}, 0))`;
  const pin = at(PROVIDERS.map((p) => p.price.input), pi);
  const pout = at(PROVIDERS.map((p) => p.price.output), pi);
  const pcached = at(PROVIDERS.map((p) => p.price.cached), pi);
  const list = `((ifNull(${input}, 0) * ${pin} + ifNull(${cached}, 0) * ${pcached} + ifNull(${cacheWrite}, 0) * ${pin} * 1.25
    + (ifNull(${output}, 0) + ifNull(${reasoning}, 0)) * ${pout}) * ${at(MODEL_PRICE, mi)} / 1e6)`;
  const paid = `(${at(PROVIDERS.map((p) => (p.group === 'paid' ? 1 : 0)), pi)})`;
  const duration = `if(${failed}, toFloat64(50 + ${H(x, 8)} % 400), toFloat64(300 + ${H(x, 8)} % 20000))`;
  return { status, failed, aborted, input, cached, cacheWrite, output, reasoning, total, list, cost: `(${list} * ${paid})`, duration };
}

/**
 * `INSERT ... SELECT` of rows [start, start + count): start times spread over [nowMs - spanMs, nowMs - 60 s), or, with
 * `slice` ({ index, of }), over that slice of it (the span cut into `of` equal slices, oldest first): inserts made
 * in time order, as a gateway makes them.
 */
export function insertSql({ start, count, nowMs, spanMs, slice }) {
  const n = 'n';
  const r = `(${n} % 20)`;
  const kind = `multiIf(${r} = 0, 'combo', ${r} IN (1, 2), 'attempt', ${n} % 100 = 3, 'keepalive', 'request')`;
  const k = `if(${r} IN (1, 2), ${r}, 0)`; // attempt number
  const p = `(${n} - ${k})`; // the client request's row (the row itself unless an attempt)
  const hi = nowMs - 60_000;
  const lo = nowMs - spanMs;
  const sliceLen = slice ? Math.floor((hi - lo) / slice.of) : 0;
  const tsOf = slice
    ? (row) => `(toInt64(${lo + slice.index * sliceLen}) + toInt64(${H(row, 1)} % ${sliceLen}))`
    : (row) => `(toInt64(${hi}) - toInt64(${H(row, 1)} % ${hi - lo}))`;
  const c = `(${H(p, 7)} % ${COMBOS.length})`; // combo of the client request p
  const memberPi = (attempt) => at(COMBOS.map((cb) => cb.members[attempt - 1][0]), c);
  const memberMi = (attempt) => at(COMBOS.map((cb) => cb.members[attempt - 1][1]), c);

  // Direct requests and pings: a provider and model by hash. Attempts: their combo's member.
  const directPi = `(${H(n, 3)} % ${PROVIDERS.length})`;
  const directMi = `if(${n} % 100 = 3, 2, ${H(n, 4)} % 4)`;
  const a1 = call(`(${p} + 1)`, memberPi(1), memberMi(1));
  const a2 = call(`(${p} + 2)`, memberPi(2), memberMi(2));
  const self = call(n, `if(${r} IN (1, 2), if(${r} = 1, ${memberPi(1)}, ${memberPi(2)}), ${directPi})`, `if(${r} IN (1, 2), if(${r} = 1, ${memberMi(1)}, ${memberMi(2)}), ${directMi})`);
  const pi = `if(${r} = 0, ${memberPi(2)}, if(${r} IN (1, 2), if(${r} = 1, ${memberPi(1)}, ${memberPi(2)}), ${directPi}))`;
  const mi = `if(${r} = 0, ${memberMi(2)}, if(${r} IN (1, 2), if(${r} = 1, ${memberMi(1)}, ${memberMi(2)}), ${directMi}))`;

  // Attempts run one after the other: attempt 1 starts 3 ms after the client request, attempt 2 when 1 ended.
  const tsP = tsOf(p);
  const ts = `multiIf(${r} = 1, ${tsP} + 3, ${r} = 2, ${tsP} + 5 + toInt64(${a1.duration}), ${tsP})`;
  const comboDuration = `toFloat64(7 + toInt64(${a1.duration}) + toInt64(${a2.duration}))`;
  const isCombo = `${r} = 0`;
  const sumNull = (e1, e2) => `if(${e1} IS NULL AND ${e2} IS NULL, NULL, ifNull(${e1}, 0) + ifNull(${e2}, 0))`;
  const comboStatus = `if(${a1.status} = 'success' OR ${a2.status} = 'success', 'success', ${a2.status})`;
  const status = `if(${isCombo}, ${comboStatus}, ${self.status})`;
  const providers = PROVIDERS.map((x) => x.id);
  const groups = PROVIDERS.map((x) => x.group);
  const models = PROVIDERS.flatMap((x) => x.models.map((m) => `${x.id}/${m}`));
  const model = `${sqlArr(models)}[(${pi}) * 4 + (${mi}) + 1]`;
  const combo = `if(${r} IN (0, 1, 2), ${at(COMBOS.map((cb) => cb.name), c)}, '')`;
  const duration = `if(${isCombo}, ${comboDuration}, ${self.duration})`;
  const stream = `${H(p, 12)} % 3 != 0`;

  const cols = {
    request_id: uuid7(n, 'g_ts'),
    kind: 'g_kind',
    parent_id: `if(${r} IN (1, 2), ${uuid7(p, tsP)}, NULL)`,
    combo: 'g_combo',
    attempt: k,
    ts: `fromUnixTimestamp64Milli(g_ts, 'UTC')`,
    end_ts: `fromUnixTimestamp64Milli(g_ts + toInt64(g_duration), 'UTC')`,
    endpoint: `if(${H(p, 16)} % 5 = 0, '/v1/messages', '/v1/chat/completions')`,
    provider: `${sqlArr(providers)}[g_pi + 1]`,
    provider_group: `${sqlArr(groups)}[g_pi + 1]`,
    connection: `'default'`,
    auto_switched: 'false',
    model: 'g_model',
    requested_model: `if(${r} = 0, g_combo, g_model)`,
    api_key_name: `if(g_kind = 'keepalive', '', ${at(API_KEYS, `${H(p, 15)} % ${API_KEYS.length}`)})`,
    stream: `g_kind != 'keepalive' AND ${stream}`,
    status: 'g_status',
    http_status: `multiIf(g_status = 'success' OR g_status = 'aborted', 200, ${at([429, 500, 502, 401], `${H(n, 17)} % 4`)})`,
    error_type: `multiIf(g_status = 'success', '', g_status = 'aborted', 'TOLLGATE_ERR_CLIENT_ABORTED', 'TOLLGATE_ERR_UPSTREAM_STATUS')`,
    input_tokens: `if(${isCombo}, ${sumNull(a1.input, a2.input)}, ${self.input})`,
    cached_tokens: `if(${isCombo}, ${sumNull(a1.cached, a2.cached)}, ${self.cached})`,
    cache_write_tokens: `if(${isCombo}, ${sumNull(a1.cacheWrite, a2.cacheWrite)}, ${self.cacheWrite})`,
    output_tokens: `if(${isCombo}, ${sumNull(a1.output, a2.output)}, ${self.output})`,
    reasoning_tokens: `if(${isCombo}, ${sumNull(a1.reasoning, a2.reasoning)}, ${self.reasoning})`,
    total_tokens: `if(${isCombo}, ${a1.total} + ${a2.total}, ${self.total})`,
    usage_source: `multiIf(g_status = 'success', 'reported', g_status = 'aborted', 'estimated', 'none')`,
    cost: `toDecimal64(if(${isCombo}, ${a1.cost} + ${a2.cost}, ${self.cost}), 12)`,
    list_cost: `toDecimal64(if(${isCombo}, ${a1.list} + ${a2.list}, ${self.list}), 12)`,
    duration_ms: 'g_duration',
    ttft_ms: `if(${stream} AND g_kind != 'keepalive', toFloat64(80 + ${H(n, 18)} % 900), NULL)`,
    upstream_ms: `if(${isCombo}, NULL, g_duration - 1)`,
  };
  return `INSERT INTO ${DB}.requests (${Object.keys(cols).join(', ')})
    SELECT ${Object.values(cols).join(',\n      ')}
    FROM (
      SELECT number AS n, ${kind} AS g_kind, ${ts} AS g_ts, ${pi} AS g_pi, ${model} AS g_model, ${combo} AS g_combo,
        ${status} AS g_status, ${duration} AS g_duration
      FROM numbers(${start}, ${count})
    )`;
}
