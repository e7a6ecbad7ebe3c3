// The validated, frozen configuration. The schema in schema.ts is the source of truth for what is accepted;
// these types describe the object it yields after defaults are applied.

export const PROVIDER_GROUPS = ['subscription', 'paid', 'free'] as const;
export type ProviderGroup = (typeof PROVIDER_GROUPS)[number];
export type WireFormat = 'openai' | 'openai-responses' | 'anthropic' | 'gemini' | 'mock';
export type Capability = 'vision' | 'pdf' | 'audio' | 'tools' | 'reasoning' | 'structured_output';

export interface Price {
  readonly input: number;
  readonly output: number;
  readonly cached?: number;
  readonly cache_write?: number;
  /** Cache writes that last an hour (Anthropic's `ttl: '1h'`); default twice `input` (src/ledger/cost.ts). */
  readonly cache_write_1h?: number;
  readonly reasoning?: number;
  /** Audio input tokens (a part of input: OpenAI Chat's, Gemini's); default `input` (src/ledger/cost.ts). */
  readonly input_audio?: number;
  /** Audio output tokens (a part of output); default `output`. */
  readonly output_audio?: number;
  /** USD per 1,000 web searches the provider runs and bills per search (Anthropic's server tool; default 10 there). */
  readonly web_search_per_1k?: number;
  /** Prices for long prompts (docs/catalog.md, "Price tiers"): the highest tier the prompt is above applies. */
  readonly tiers?: readonly PriceTier[];
  /** Prices of a call served at another service tier (`flex`, `priority`), by its name (src/ledger/cost.ts). */
  readonly service_tiers?: Readonly<Record<string, ServiceTierPrice>>;
}

/** The prices a service tier sets; the fields it leaves out keep the price they would have. */
export type ServiceTierPrice = Partial<Pick<Price, 'input' | 'output' | 'cached' | 'cache_write' | 'cache_write_1h' | 'reasoning' | 'input_audio' | 'output_audio'>>;

/** The prices that apply once a request's prompt (input, cache reads and writes) has more than `above_input_tokens`. */
export interface PriceTier {
  readonly above_input_tokens: number;
  readonly input?: number;
  readonly output?: number;
  readonly cached?: number;
  readonly cache_write?: number;
  readonly cache_write_1h?: number;
  readonly reasoning?: number;
  readonly input_audio?: number;
  readonly output_audio?: number;
}

export interface ModelConfig {
  readonly kind: 'llm' | 'image' | 'embedding';
  readonly capabilities: readonly Capability[];
  readonly max_output_tokens?: number;
  readonly thinking?: string;
  readonly price?: Partial<Price>;
}

export interface MockOptions {
  readonly chunks: number;
  readonly latency_ms: number;
  readonly chunk_delay_ms: number;
  readonly input_tokens?: number;
}

export interface ConnectionKey {
  readonly name: string;
  readonly key: string;
  /** A region- or cluster-specific base URL for this key; the provider's otherwise. */
  readonly base_url?: string;
  /** Keep-alive pings for this connection; the provider's `keepalive.enabled` otherwise. */
  readonly keepalive?: boolean;
}

export type OAuthFlow = 'device_code' | 'pkce';

/**
 * OAuth 2.0 settings of a provider: the device authorization grant (RFC 8628) or the authorization code grant with
 * PKCE (RFC 7636, RFC 8252); tokens are stored encrypted under data_dir.
 */
export interface OAuthSettings {
  readonly flow?: OAuthFlow;
  /** device_code: the device authorization endpoint. */
  readonly device_authorization_url?: string;
  /** pkce: the authorization endpoint the user's browser opens. */
  readonly authorization_url?: string;
  readonly token_url: string;
  readonly client_id: string;
  readonly client_secret?: string;
  readonly scope?: string;
  /** pkce: a fixed, registered redirect URI (the code is pasted back); absent: a loopback listener. */
  readonly redirect_uri?: string;
  /** pkce: extra authorization request parameters. */
  readonly authorization_params?: Readonly<Record<string, string>>;
}

export interface ProviderAuth {
  readonly type: 'api_key' | 'none' | 'oauth';
  readonly key?: string;
  readonly header?: string;
  readonly keys?: readonly ConnectionKey[];
  readonly oauth?: OAuthSettings;
}

export interface KeepaliveConfig {
  readonly enabled: boolean;
  /** The model id pinged (default: the provider's first listed model). */
  readonly model?: string;
  /** The rolling window a ping starts, e.g. `5h`. */
  readonly window: string;
}

export type ComboStrategy = 'fallback' | 'round-robin' | 'fusion' | 'capacity';

export interface ComboConfig {
  readonly strategy: ComboStrategy;
  /** `<provider>/<model>` members, each may carry a `(level)` thinking suffix. */
  readonly models: readonly string[];
  /** fusion: the model that synthesises the final answer (default: the first member). */
  readonly judge?: string;
  /** fusion: answers to wait for (default: a majority of the members). */
  readonly quorum?: number;
  /** fusion: how long to wait for the other members once the quorum has answered. */
  readonly grace_ms?: number;
  /** fusion: the hard limit on the fan-out; the judge works with what has arrived by then. */
  readonly timeout_ms?: number;
}

export interface CooldownConfig {
  readonly initial_s: number;
  readonly max_s: number;
  readonly multiplier: number;
}

export interface ProviderConfig {
  readonly name: string;
  readonly group: ProviderGroup;
  readonly format: WireFormat;
  readonly base_url: string;
  readonly auth: ProviderAuth;
  readonly keepalive: KeepaliveConfig;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeouts: { readonly connect_s: number; readonly stall_s: number; readonly request_s: number };
  readonly connections: number;
  readonly price?: Price;
  readonly quota?: Readonly<Record<string, unknown>>;
  readonly mock: MockOptions;
  readonly models: Readonly<Record<string, ModelConfig>>;
  /**
   * The catalog provider (config/catalog.ts) that fills prices, limits and capabilities the YAML leaves out: after
   * load, the resolved id, or '' for none.
   */
  readonly catalog?: string;
  /** Forward model ids that are not listed under `models` (labelled '_other' in metrics). */
  readonly allow_unlisted_models: boolean;
}

export type KeyRole = 'admin' | 'user';

export interface ApiKey {
  readonly name: string;
  readonly key: string;
  /** Absent on every key: every key is an admin (one-key setups keep working). Otherwise absent means user. */
  readonly role?: KeyRole;
}

export interface AlertThresholds {
  readonly quota: readonly number[];
  readonly daily: readonly number[];
  readonly monthly: readonly number[];
  readonly anomaly_multiple: number;
}

export interface Config {
  readonly server: {
    readonly host: string;
    readonly port: number;
    readonly api_keys: readonly ApiKey[];
    readonly body_limit_bytes: number;
    /** The largest non-streamed upstream answer read whole (docs/config.md). */
    readonly upstream_answer_limit_bytes: number;
    readonly trust_proxy: readonly string[];
    readonly rate_limit: { readonly requests_per_minute: number; readonly auth_failures_per_minute: number };
    readonly metrics_auth: boolean;
    /** The URL clients outside reach this instance at ('' when none): GET /api/tunnel reports and checks it. */
    readonly public_url: string;
    readonly json_max_depth: number;
    /** Seconds without a proxied request, after some, before one full garbage collection; 0 turns it off. */
    readonly idle_gc_s: number;
    /** Seconds a client has to send a whole request (headers and body); 0: no limit. Read at start. */
    readonly request_timeout_s: number;
    readonly shutdown_timeout_s: number;
  };
  readonly storage: {
    readonly clickhouse_url: string;
    /** A ClickHouse cluster name ('' for none): migrations run ON CLUSTER with Replicated engines. */
    readonly cluster: string;
    /** With `cluster`: several shards, Distributed tables over `<table>_local` Replicated ones. */
    readonly sharded: boolean;
    readonly database: string;
    readonly data_dir: string;
    readonly username: string;
    readonly password: string;
    /** ClickHouse server only: how long a request may go without an answer before it fails. */
    readonly request_timeout_ms: number;
    readonly batch: { readonly max_rows: number; readonly flush_ms: number; readonly queue_max: number };
    /**
     * The on-disk spool (src/store/spool.ts), in `dir` ('' = data_dir/spool); max_bytes is normalised to bytes at
     * load.
     */
    readonly spool: { readonly commit_ms: number; readonly max_bytes: number; readonly dir: string };
  };
  readonly telemetry: { readonly otlp_endpoint: string; readonly service_name: string };
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly combos: Readonly<Record<string, ComboConfig>>;
  readonly routing: { readonly cooldown: CooldownConfig };
  readonly budgets: {
    readonly daily_usd?: number;
    readonly monthly_usd?: number;
    readonly timezone?: string;
    readonly auto_switch: { readonly enabled: boolean; readonly to?: string };
  };
  readonly alerts: {
    /** Each kind on unless set to false. */
    readonly kinds: Readonly<Partial<Record<'quota_warning' | 'quota_exhausted' | 'quota_reset' | 'daily_budget' | 'monthly_budget' | 'cost_anomaly' | 'exhaustion_pattern', boolean>>>;
    /** Percentages that fire quota_warning, daily_budget and monthly_budget; the cost_anomaly multiple. */
    readonly thresholds: AlertThresholds;
    readonly channels: {
      readonly dashboard: boolean;
      readonly email?: { readonly enabled: boolean; readonly smtp_url: string; readonly from: string; readonly to: readonly string[] };
      readonly webhook?: { readonly enabled: boolean; readonly url: string; readonly secret?: string };
    };
  };
}
