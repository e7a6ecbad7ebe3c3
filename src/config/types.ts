// The validated, frozen configuration. The schema in schema.ts is the source of truth for what is accepted;
// these types describe the object it yields after defaults are applied.

export type ProviderGroup = 'subscription' | 'paid' | 'free';
export type WireFormat = 'openai' | 'openai-responses' | 'anthropic' | 'gemini' | 'mock';
export type Capability = 'vision' | 'pdf' | 'audio' | 'tools' | 'reasoning' | 'structured_output';

export interface Price {
  readonly input: number;
  readonly output: number;
  readonly cached?: number;
  readonly cache_write?: number;
  readonly reasoning?: number;
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

export interface ProviderConfig {
  readonly name: string;
  readonly group: ProviderGroup;
  readonly format: WireFormat;
  readonly base_url: string;
  readonly auth: { readonly type: 'api_key' | 'none' | 'oauth'; readonly key?: string; readonly header?: string };
  readonly headers: Readonly<Record<string, string>>;
  readonly timeouts: { readonly connect_s: number; readonly stall_s: number; readonly request_s: number };
  readonly connections: number;
  readonly price?: Price;
  readonly quota?: Readonly<Record<string, unknown>>;
  readonly mock: MockOptions;
  readonly models: Readonly<Record<string, ModelConfig>>;
  /** Forward model ids that are not listed under `models` (labelled '_other' in metrics). */
  readonly allow_unlisted_models: boolean;
}

export interface ApiKey {
  readonly name: string;
  readonly key: string;
}

export interface Config {
  readonly server: {
    readonly host: string;
    readonly port: number;
    readonly api_keys: readonly ApiKey[];
    readonly body_limit_bytes: number;
  };
  readonly storage: {
    readonly clickhouse_url: string;
    readonly database: string;
    readonly data_dir: string;
    readonly username: string;
    readonly password: string;
    readonly batch: { readonly max_rows: number; readonly flush_ms: number; readonly queue_max: number };
  };
  readonly telemetry: { readonly otlp_endpoint: string; readonly service_name: string };
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly combos: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly budgets: Readonly<Record<string, unknown>>;
  readonly alerts: Readonly<Record<string, unknown>>;
}
