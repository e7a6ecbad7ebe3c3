// Live reload: the running file is polled; a valid edit replaces the config for new requests (a request in flight
// keeps the snapshot it started with); an invalid edit is logged with its issues and the old config keeps serving.
// Sections that only take effect at start (server.host/port, storage, telemetry) are reported as needing a restart.

import { statSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { ConfigError, keyIssues, parseConfigText, readConfigText, type ConfigIssue } from './load.js';
import type { Config } from './types.js';

export type ConfigListener = (next: Config, prev: Config) => void;

export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Holds the current config; everything that must see live edits reads `current` per request. */
export class ConfigHolder {
  #current: Config;
  #fileText: string | null = null;
  readonly #listeners: ConfigListener[] = [];
  /** The config the process started with: its restart-only settings are the ones in force (the address it listens on). */
  readonly started: Config;

  /** `fileText`: the text of the file `initial` was read from (a reload or SIGHUP finding the same text is no edit). */
  constructor(initial: Config, opts: { fileText?: string } = {}) {
    this.#current = initial;
    this.started = initial;
    this.#fileText = opts.fileText ?? null;
  }

  get current(): Config {
    return this.#current;
  }

  onChange(fn: ConfigListener): void {
    this.#listeners.push(fn);
  }

  /** The text of the config file `current` was read from, when a reload or a settings write said so. */
  get fileText(): string | null {
    return this.#fileText;
  }

  /**
   * Make `next` current and tell every listener. One that throws does not keep the others from it (a channel that
   * failed to build kept the gate from the edit's keys: a removed key went on working): every listener is told, then
   * a ListenersFailed names what failed.
   */
  replace(next: Config, opts: { fileText?: string } = {}): void {
    const prev = this.#current;
    this.#current = next;
    this.#fileText = opts.fileText ?? null;
    const failed: unknown[] = [];
    for (const fn of this.#listeners) {
      try {
        fn(next, prev);
      } catch (err) {
        failed.push(err);
      }
    }
    if (failed.length > 0) throw new ListenersFailed(failed);
  }
}

/** Listeners of a config change that threw (the config was applied, and the other listeners told). */
export class ListenersFailed extends Error {
  constructor(readonly errors: readonly unknown[]) {
    super(`a part of the gateway could not take the config: ${errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ')}`);
    this.name = 'ListenersFailed';
  }
}

const RESTART_ONLY = ['server.host', 'server.port', 'server.body_limit_bytes', 'server.trust_proxy', 'server.request_timeout_s', 'storage', 'telemetry'] as const;

function restartOnlyChanges(next: Config, prev: Config): string[] {
  const pick = (c: Config, k: (typeof RESTART_ONLY)[number]): unknown =>
    k === 'storage' || k === 'telemetry' ? c[k] : c.server[k.slice('server.'.length) as 'host' | 'port' | 'body_limit_bytes' | 'trust_proxy' | 'request_timeout_s'];
  return RESTART_ONLY.filter((k) => JSON.stringify(pick(next, k)) !== JSON.stringify(pick(prev, k)));
}

/**
 * The keys `next` gives, checked against the address the gateway listens on. The loader checked them against the
 * file's server.host, which applies at a restart only: an edit of it with the keys removed (or made weak) would
 * otherwise leave a listener on a public address open to anyone.
 */
export function runningKeyIssues(holder: ConfigHolder, next: Config): ConfigIssue[] {
  const host = holder.started.server.host;
  if (host === next.server.host) return [];
  return keyIssues(host, next.server.api_keys).map((i) => ({ ...i, message: `${i.message} (the gateway listens there until it restarts; server.host applies then)` }));
}

/**
 * Make `next` (read from `file`, whose text is `text`) the running config: the one way a live edit is applied. Keys
 * the listening address refuses (runningKeyIssues) are a ConfigError: nothing is applied.
 */
export function applyConfig(holder: ConfigHolder, next: Config, edit: { file: string; text: string; log: Logger }): void {
  const keys = runningKeyIssues(holder, next);
  if (keys.length > 0) throw new ConfigError(edit.file, keys);
  const restart = restartOnlyChanges(next, holder.current);
  if (restart.length > 0) edit.log.warn({ sections: restart }, 'config edit changes settings that apply only at start; restart to use them');
  try {
    holder.replace(next, { fileText: edit.text });
  } catch (err) {
    if (!(err instanceof ListenersFailed)) throw err;
    edit.log.error({ err }, 'config reloaded, but a part of the gateway could not take the edit');
  }
  edit.log.info({ file: edit.file }, 'config reloaded');
}

/**
 * Poll `file` and apply valid edits to `holder`. Returns a function that stops watching. `loaded` is the file's
 * stat taken before `holder`'s config was read from it: an edit made since (while the app was starting) is applied
 * at once instead of being lost until the next edit.
 */
/** Read the file and apply it when it changed (an edit, or SIGHUP: main.ts); a bad one is logged and not applied. */
export function reloadConfigFile(file: string, holder: ConfigHolder, log: Logger, onRejected: () => void = () => undefined): void {
  try {
    const text = readConfigText(file);
    // Written by the settings API, which applied it already.
    if (text === holder.fileText) return;
    applyConfig(holder, parseConfigText(text, process.env, file), { file, text, log });
  } catch (err) {
    const issues = err instanceof ConfigError ? err.issues : [{ path: '(file)', message: (err as Error).message }];
    log.error({ file, issues }, 'config edit rejected; the previous config keeps serving');
    onRejected();
  }
}

export function watchConfigFile(
  file: string, holder: ConfigHolder, log: Logger, onRejected: () => void = () => undefined, intervalMs = 500, loaded?: Stats,
): () => void {
  const onChange = (curr: Stats, prev: Stats): void => {
    // The change time and the inode too: a save of the same length within a coarse clock's tick (or a copy that kept
    // the modification time: `cp -p`, `rsync -a`) changes neither of the first two.
    if (curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ctimeMs === prev.ctimeMs && curr.ino === prev.ino) return;
    reloadConfigFile(file, holder, log, onRejected);
  };
  watchFile(file, { interval: intervalMs, persistent: false }, onChange);
  if (loaded) {
    const now = statSync(file, { throwIfNoEntry: false });
    if (now) onChange(now, loaded);
  }
  return () => unwatchFile(file, onChange);
}
