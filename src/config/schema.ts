// One closed JSON Schema for the whole YAML file. Unknown keys are errors; every default lives here.
// Sections that later capabilities act on (combos, budgets, alerts, quota) are already validated so that the
// file a user writes today keeps working.

const num = (extra: Record<string, unknown> = {}) => ({ type: 'number', minimum: 0, ...extra });

/**
 * The highest price a config may set, USD per 1M tokens (the dearest list price today is $600 an output Mtok): with
 * at most MAX_CALL_TOKENS a bucket (src/ledger/types.ts), no call's cost passes what the row's `cost` column holds.
 */
export const MAX_PRICE_PER_MTOK = 9_999;
const str = { type: 'string' };
const closed = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  additionalProperties: false,
  properties,
  ...extra,
});

const CAPABILITIES = ['vision', 'pdf', 'audio', 'tools', 'reasoning', 'structured_output'];
const THINKING = [
  'openai', 'anthropic-budget', 'anthropic-adaptive', 'gemini-budget', 'gemini-level',
  'zai', 'qwen', 'deepseek', 'kimi', 'minimax',
];

// A tier: the prices that apply instead once a request's prompt (input + cache reads + cache writes) is longer than
// `above_input_tokens` (e.g. a long-context tier above 200k); the fields it leaves out keep the base price.
// USD per 1M tokens, bounded so that no call's cost passes what the row's `cost` column holds (MAX_CALL_TOKENS).
const usd = () => num({ maximum: MAX_PRICE_PER_MTOK });
// USD per 1,000 web searches: with a call's searches bounded (MAX_CALL_SEARCHES, src/ledger/types.ts), a call's
// searches cost at most 100 x 999 / 1000 = 99.9 USD, which its token buckets' most leaves room for in the `cost` column.
const searchUsd = () => num({ maximum: 999 });
const priceTier = closed(
  { above_input_tokens: { type: 'integer', minimum: 1 }, input: usd(), output: usd(), cached: usd(), cache_write: usd(), cache_write_1h: usd(), reasoning: usd(), input_audio: usd(), output_audio: usd() },
  { required: ['above_input_tokens'] },
);
const tiers = { type: 'array', items: priceTier, maxItems: 16 };
// The prices of a call the provider served at another service tier than its standard one (OpenAI's `flex` and
// `priority`, Anthropic's `priority`), by the tier's name as the answer reports it; the fields left out keep the price
// they would have (src/ledger/cost.ts). At most 8 tiers.
const serviceTiers = {
  type: 'object',
  propertyNames: { pattern: '^[a-z][a-z0-9_-]{0,31}$' },
  additionalProperties: closed({ input: usd(), output: usd(), cached: usd(), cache_write: usd(), cache_write_1h: usd(), reasoning: usd(), input_audio: usd(), output_audio: usd() }),
  maxProperties: 8,
};
const price = closed(
  { input: usd(), output: usd(), cached: usd(), cache_write: usd(), cache_write_1h: usd(), reasoning: usd(), input_audio: usd(), output_audio: usd(), web_search_per_1k: searchUsd(), tiers, service_tiers: serviceTiers },
  { required: ['input', 'output'] },
);
const partialPrice = closed({ input: usd(), output: usd(), cached: usd(), cache_write: usd(), cache_write_1h: usd(), reasoning: usd(), input_audio: usd(), output_audio: usd(), web_search_per_1k: searchUsd(), tiers, service_tiers: serviceTiers });

const model = closed({
  kind: { enum: ['llm', 'image', 'embedding'], default: 'llm' },
  capabilities: { type: 'array', items: { enum: CAPABILITIES }, uniqueItems: true, default: [] },
  max_output_tokens: { type: 'integer', minimum: 1 },
  thinking: { enum: THINKING },
  price: partialPrice,
});

const window = { type: 'string', pattern: '^[0-9]+[smhd]$' };

const quota = closed(
  {
    kind: { enum: ['rolling_hours', 'daily_requests', 'monthly', 'daily_tokens', 'rolling_tokens', 'monthly_tokens', 'unlimited'] },
    limit: num(),
    monthly_limit: num(),
    window,
    reset_time: { type: 'string', pattern: '^[0-2][0-9]:[0-5][0-9]([+-][0-2][0-9]:[0-5][0-9]|Z)$' },
    anchor_day: { type: 'integer', minimum: 1, maximum: 31 },
    unit: { enum: ['hours', 'tokens', 'requests'] },
    // A provider usage source: an HTTP endpoint answering { used, limit, reset? } (docs/quota.md).
    source: closed(
      {
        url: { type: 'string', pattern: '^https?://[^\\s]+$' },
        headers: { type: 'object', additionalProperties: str, default: {} },
        refresh_s: num({ minimum: 180, default: 180 }),
      },
      { required: ['url'] },
    ),
  },
  { required: ['kind'] },
);

const connectionKey = closed(
  {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' },
    key: { type: 'string', minLength: 1 },
    base_url: { type: 'string', pattern: '^https?://[^\\s]+$' },
    keepalive: { type: 'boolean' },
  },
  { required: ['name', 'key'] },
);

const oauth = closed(
  {
    // device_code: RFC 8628 (needs device_authorization_url); pkce: authorization code with PKCE, RFC 7636 and
    // RFC 8252 (needs authorization_url). docs/connections.md.
    flow: { enum: ['device_code', 'pkce'], default: 'device_code' },
    device_authorization_url: { type: 'string', pattern: '^https?://[^\\s]+$' },
    authorization_url: { type: 'string', pattern: '^https?://[^\\s]+$' },
    token_url: { type: 'string', pattern: '^https?://[^\\s]+$' },
    client_id: { type: 'string', minLength: 1 },
    client_secret: str,
    scope: str,
    // pkce: a fixed redirect URI registered for the client (the code is pasted back); none: a loopback listener
    // on 127.0.0.1 with an ephemeral port (RFC 8252 §7.3).
    redirect_uri: { type: 'string', pattern: '^https?://[^\\s]+$' },
    // pkce: extra parameters of the authorization request (e.g. audience), as the provider documents them.
    authorization_params: { type: 'object', additionalProperties: str, default: {} },
  },
  { required: ['token_url', 'client_id'] },
);

const keepalive = closed(
  { enabled: { type: 'boolean', default: false }, model: str, window: { ...window, default: '5h' } },
  { default: {} },
);

const provider = closed(
  {
    name: str,
    group: { enum: ['subscription', 'paid', 'free'] },
    format: { enum: ['openai', 'openai-responses', 'anthropic', 'gemini', 'mock'] },
    base_url: { type: 'string', pattern: '^https?://[^\\s]+$' },
    auth: closed(
      {
        type: { enum: ['api_key', 'none', 'oauth'] },
        key: str,
        header: { type: 'string', pattern: '^[A-Za-z0-9-]+$' },
        // Several connections (accounts, regions, clusters) of one provider; each may have its own base_url.
        keys: { type: 'array', minItems: 1, items: connectionKey },
        oauth,
      },
      { required: ['type'], default: { type: 'none' } },
    ),
    keepalive,
    headers: { type: 'object', additionalProperties: str, default: {} },
    timeouts: closed(
      {
        connect_s: num({ exclusiveMinimum: 0, default: 10 }),
        stall_s: num({ exclusiveMinimum: 0, default: 30 }),
        request_s: num({ exclusiveMinimum: 0, default: 600 }),
      },
      { default: {} },
    ),
    connections: { type: 'integer', minimum: 1, maximum: 4096, default: 128 },
    price,
    quota,
    mock: closed(
      {
        chunks: { type: 'integer', minimum: 1, maximum: 10000, default: 8 },
        latency_ms: num({ default: 20 }),
        chunk_delay_ms: num({ default: 5 }),
        input_tokens: { type: 'integer', minimum: 0 },
      },
      { default: {} },
    ),
    models: { type: 'object', additionalProperties: model, default: {} },
    // The models.dev catalog provider whose prices, limits and capabilities fill what the YAML leaves out
    // (docs/catalog.md); default: the provider prefix when the catalog knows it; '' for none.
    catalog: { type: 'string', pattern: '^([A-Za-z0-9][A-Za-z0-9._-]*)?$' },
    allow_unlisted_models: { type: 'boolean', default: false },
  },
  { required: ['group', 'format'] },
);

/** The alert thresholds (percent of a quota or budget; the anomaly's multiple of the daily average) when unset. */
export const ALERT_THRESHOLD_DEFAULTS = {
  quota: [80, 90],
  daily: [80, 100],
  monthly: [50, 80, 100],
  anomaly_multiple: 2,
} as const;

/**
 * The most percentages one thresholds list holds: a warning every 5 % of a quota or budget. Each is a crossing
 * checked for every quota and budget at each evaluation and fired once per window; the list is also a body of
 * PUT /api/settings/alerts, where a 300,000-item list held the event loop for 21 s and was written to the file.
 */
export const ALERT_THRESHOLDS_MAX_ITEMS = 20;

const percents = (d: readonly number[]) => ({
  type: 'array', minItems: 1, maxItems: ALERT_THRESHOLDS_MAX_ITEMS, uniqueItems: true, items: { type: 'number', exclusiveMinimum: 0, maximum: 1000 }, default: [...d],
});

/**
 * The longest strings PUT /api/settings/budgets writes: an IANA zone name is at most about 30 characters, a
 * `<provider>/<model>` or combo name far below 256. Without a bound, any string the body limit allowed was written to
 * the file (`auto_switch.to` is not checked against the models and combos at load).
 */
export const SETTING_STRING_MAX_LENGTH = { timezone: 64, to: 256 } as const;

const combo = closed(
  {
    strategy: { enum: ['fallback', 'round-robin', 'fusion', 'capacity'] },
    models: { type: 'array', items: str, minItems: 1 },
    judge: str,
    quorum: { type: 'integer', minimum: 1 },
    grace_ms: num(),
    timeout_ms: num({ exclusiveMinimum: 0 }),
  },
  { required: ['strategy', 'models'] },
);

export const CONFIG_SCHEMA = closed({
  server: closed(
    {
      host: { type: 'string', minLength: 1, default: '127.0.0.1' },
      port: { type: 'integer', minimum: 0, maximum: 65535, default: 4000 },
      api_keys: {
        type: 'array',
        default: [],
        items: closed(
          { name: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 }, role: { enum: ['admin', 'user'] } },
          { required: ['name', 'key'] },
        ),
      },
      body_limit_bytes: { type: 'integer', minimum: 1, default: 128 * 1024 * 1024 },
      // The largest whole (non-streamed) upstream answer read; past it the call fails TOLLGATE_ERR_UPSTREAM_TOO_LARGE.
      upstream_answer_limit_bytes: { type: 'integer', minimum: 1024, default: 64 * 1024 * 1024 },
      // Addresses or CIDRs of proxies whose X-Forwarded-For is believed; anyone else's is ignored.
      trust_proxy: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true, default: [] },
      rate_limit: closed(
        {
          requests_per_minute: { type: 'integer', minimum: 0, default: 0 },
          auth_failures_per_minute: { type: 'integer', minimum: 1, default: 10 },
        },
        { default: {} },
      ),
      metrics_auth: { type: 'boolean', default: false },
      // The address this instance is reached at from outside (a tunnel, a reverse proxy); GET /api/tunnel checks it.
      public_url: { type: 'string', pattern: '^(https?://[^\\s/?#@]+(/[^\\s?#]*)?)?$', default: '' },
      // JSON bodies deeper than this are refused with 400 before any handler sees them.
      json_max_depth: { type: 'integer', minimum: 8, maximum: 10000, default: 128 },
      // Seconds without a proxied request, after some, before one full garbage collection (src/core/idle-gc.ts); 0: off.
      idle_gc_s: num({ default: 10 }),
      // Seconds a client has to send a whole request (its headers and body); 0: no limit (restart to change).
      request_timeout_s: num({ default: 120 }),
      // How long a clean stop waits for the requests in flight before it closes their connections (src/pipeline/drain.ts).
      shutdown_timeout_s: num({ default: 25 }),
    },
    { default: {} },
  ),
  storage: closed(
    {
      clickhouse_url: { type: 'string', default: '' },
      // A ClickHouse cluster name: the migrations create Replicated tables ON CLUSTER (docs/scaling.md).
      cluster: { type: 'string', pattern: '^([A-Za-z_][A-Za-z0-9_]*)?$', default: '' },
      // With a cluster of several shards: <table>_local Replicated tables under Distributed ones (docs/scaling.md).
      sharded: { type: 'boolean', default: false },
      database: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', default: 'tollgate' },
      data_dir: { type: 'string', minLength: 1, default: './data' },
      username: { type: 'string', default: 'default' },
      password: { type: 'string', default: '' },
      // ClickHouse server only: a request with no answer for this long fails (and the writer retries it).
      request_timeout_ms: { type: 'integer', minimum: 100, maximum: 600000, default: 30000 },
      batch: closed(
        {
          max_rows: { type: 'integer', minimum: 1, default: 10000 },
          flush_ms: { type: 'integer', minimum: 10, default: 2000 },
          // Kept so that files which set it stay valid; the spool's max_bytes bounds what waits now.
          queue_max: { type: 'integer', minimum: 1, default: 100000 },
        },
        { default: {} },
      ),
      spool: closed(
        {
          commit_ms: { type: 'integer', minimum: 1, maximum: 60000, default: 50 },
          // '' = <data_dir>/spool. Another disk than the embedded engine's keeps rows safe when that disk fails.
          dir: { type: 'string', default: '' },
          // Bytes, or a size such as 1GiB, 512MiB, 64m (normalised to bytes at load).
          max_bytes: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string' }], default: 1024 ** 3 },
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
  telemetry: closed(
    { otlp_endpoint: { type: 'string', default: '' }, service_name: { type: 'string', minLength: 1, default: 'tollgate' } },
    { default: {} },
  ),
  providers: {
    type: 'object',
    default: {},
    propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' },
    additionalProperties: provider,
  },
  combos: {
    type: 'object',
    default: {},
    // A bare name: it never contains '/', so it cannot be mistaken for `<provider>/<model>`.
    propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' },
    additionalProperties: combo,
  },
  routing: closed(
    {
      cooldown: closed(
        {
          // A day at most: the longest a provider can be taken out of rotation (an upstream's Retry-After included).
          initial_s: num({ exclusiveMinimum: 0, maximum: 86_400, default: 5 }),
          max_s: num({ exclusiveMinimum: 0, maximum: 86_400, default: 300 }),
          multiplier: num({ minimum: 1, default: 2 }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
  budgets: closed(
    {
      daily_usd: num(),
      monthly_usd: num(),
      timezone: { type: 'string', maxLength: SETTING_STRING_MAX_LENGTH.timezone },
      auto_switch: closed({ enabled: { type: 'boolean', default: false }, to: { type: 'string', maxLength: SETTING_STRING_MAX_LENGTH.to } }, { default: {} }),
    },
    { default: {} },
  ),
  alerts: closed(
    {
      kinds: {
        type: 'object',
        default: {},
        propertyNames: {
          enum: ['quota_warning', 'quota_exhausted', 'quota_reset', 'daily_budget', 'monthly_budget', 'cost_anomaly', 'exhaustion_pattern'],
        },
        additionalProperties: { type: 'boolean' },
      },
      // Crossing each percentage fires once per window (docs/alerts.md); quota exhaustion (100 %) is its own kind.
      thresholds: closed(
        {
          quota: { ...percents(ALERT_THRESHOLD_DEFAULTS.quota), items: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 100 } },
          daily: percents(ALERT_THRESHOLD_DEFAULTS.daily),
          monthly: percents(ALERT_THRESHOLD_DEFAULTS.monthly),
          anomaly_multiple: { type: 'number', exclusiveMinimum: 1, maximum: 1000, default: ALERT_THRESHOLD_DEFAULTS.anomaly_multiple },
        },
        { default: {} },
      ),
      channels: closed(
        {
          dashboard: { type: 'boolean', default: true },
          email: closed(
            { enabled: { type: 'boolean', default: true }, smtp_url: str, from: str, to: { type: 'array', items: str, minItems: 1 } },
            { required: ['smtp_url', 'from', 'to'] },
          ),
          webhook: closed({ enabled: { type: 'boolean', default: true }, url: { type: 'string', pattern: '^https?://' }, secret: str }, { required: ['url'] }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
});
