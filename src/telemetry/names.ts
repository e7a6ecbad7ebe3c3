// Metric and attribute names in one place. GenAI names follow the OpenTelemetry semantic conventions; gateway
// metrics use the tollgate_ prefix, base units and _total for counters.

export const METRIC = {
  tokenUsage: 'gen_ai_client_token_usage',
  operationDuration: 'gen_ai_client_operation_duration_seconds',
  timeToFirstToken: 'gen_ai_server_time_to_first_token_seconds',
  requests: 'tollgate_requests_total',
  tokens: 'tollgate_tokens_total',
  cost: 'tollgate_cost_usd_total',
  listCost: 'tollgate_list_cost_usd_total',
  overhead: 'tollgate_overhead_seconds',
  rowsWritten: 'tollgate_usage_rows_written_total',
  rowsDropped: 'tollgate_usage_rows_dropped_total',
  spoolRows: 'tollgate_spool_rows',
  spoolBytes: 'tollgate_spool_bytes',
  spoolOldest: 'tollgate_spool_oldest_seconds',
  storeUp: 'tollgate_store_up',
  rowsRecovered: 'tollgate_usage_rows_recovered_total',
  idleGc: 'tollgate_idle_gc_total',
  configReloads: 'tollgate_config_reloads_total',
  rateLimited: 'tollgate_rate_limited_total',
  comboRequests: 'tollgate_combo_requests_total',
  comboAttempts: 'tollgate_combo_attempts_total',
  cooldowns: 'tollgate_cooldowns_total',
  cooldownSeconds: 'tollgate_provider_cooldown_seconds',
  keepalivePings: 'tollgate_keepalive_pings_total',
  autoSwitched: 'tollgate_auto_switched_total',
  quotaUsedRatio: 'tollgate_quota_used_ratio',
  quotaRemaining: 'tollgate_quota_remaining',
  quotaResetSeconds: 'tollgate_quota_reset_seconds',
  reportedLimit: 'tollgate_provider_reported_limit',
  reportedRemaining: 'tollgate_provider_reported_remaining',
  reportedUsedRatio: 'tollgate_provider_reported_used_ratio',
  reportedResetSeconds: 'tollgate_provider_reported_reset_seconds',
  reportedAgeSeconds: 'tollgate_provider_reported_age_seconds',
  spend: 'tollgate_spend_usd',
  budgetLimit: 'tollgate_budget_limit_usd',
  alertsFired: 'tollgate_alerts_fired_total',
  notifications: 'tollgate_notifications_total',
  inflightRequests: 'tollgate_inflight_requests',
  inflightTokens: 'tollgate_inflight_tokens',
} as const;

/** Advisory bucket boundaries from the GenAI metric conventions. */
export const BUCKETS = {
  tokenUsage: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  operationDuration: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  timeToFirstToken: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
  overhead: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
} as const;

export const ATTR = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  tokenType: 'gen_ai.token.type',
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  urlFull: 'url.full',
  // Gateway attributes: the same numbers as the row, so spans agree with ClickHouse and /metrics.
  requestId: 'tollgate.request_id',
  endpoint: 'tollgate.endpoint',
  provider: 'tollgate.provider',
  providerGroup: 'tollgate.provider_group',
  apiKeyName: 'tollgate.api_key',
  status: 'tollgate.status',
  stream: 'tollgate.stream',
  inputUncached: 'tollgate.usage.input_tokens',
  cachedTokens: 'tollgate.usage.cached_tokens',
  cacheWriteTokens: 'tollgate.usage.cache_write_tokens',
  outputNonReasoning: 'tollgate.usage.output_tokens',
  reasoningTokens: 'tollgate.usage.reasoning_tokens',
  totalTokens: 'tollgate.usage.total_tokens',
  usageSource: 'tollgate.usage.source',
  cost: 'tollgate.cost_usd',
  listCost: 'tollgate.list_cost_usd',
  priceSource: 'tollgate.price_source',
  ttftMs: 'tollgate.ttft_ms',
  upstreamMs: 'tollgate.upstream_ms',
  kind: 'tollgate.kind',
  combo: 'tollgate.combo',
  attempt: 'tollgate.attempt',
  parentRequestId: 'tollgate.parent_request_id',
  connection: 'tollgate.connection',
  autoSwitched: 'tollgate.auto_switched',
  /** Client parameters a translated request did not carry (the x-tollgate-dropped-params header), a string array. */
  droppedParams: 'tollgate.dropped_params',
} as const;

/** Label value for anything not named in the config (bounded cardinality). */
export const OTHER = '_other';

/** Metric label values of the `type` label on tollgate_tokens_total, one per usage bucket. */
export const TOKEN_TYPE = {
  input: 'input',
  cached: 'cached',
  cacheWrite: 'cache_write',
  output: 'output',
  reasoning: 'reasoning',
} as const;
