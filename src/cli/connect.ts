// `tollgate connect <provider>`: run the OAuth device authorization grant for a provider with `auth.type: oauth`
// and store its tokens, encrypted, under storage.data_dir. Prints what the user must open and type; never a token.

import type { Config, OAuthSettings } from '../config/types.js';
import { CredentialStore } from '../providers/credentials.js';
import { pollForToken, startDeviceAuthorization, type PollOptions } from '../providers/oauth.js';
import { TollgateError } from '../core/errors.js';

export interface ConnectOptions extends PollOptions {
  /** Where TOLLGATE_SECRET_KEY is read (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

function settingsFor(cfg: Config, providerId: string): OAuthSettings {
  const ids = Object.keys(cfg.providers);
  if (!Object.hasOwn(cfg.providers, providerId)) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `unknown provider '${providerId}' (configured: ${ids.join(', ') || 'none'})`);
  }
  const auth = cfg.providers[providerId]!.auth;
  if (auth.type !== 'oauth') {
    throw new TollgateError(
      'TOLLGATE_ERR_INVALID_REQUEST',
      `provider '${providerId}' has auth.type ${auth.type}; \`tollgate connect\` is for providers with auth.type oauth`,
    );
  }
  if (auth.oauth === undefined) {
    throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `providers.${providerId}.auth.oauth is required when auth.type is oauth`);
  }
  return auth.oauth;
}

function duration(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 2 * 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 2 * 86400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

/** Connect `providerId`: prints the verification URI and user code, waits for approval, saves the tokens. */
export async function connect(cfg: Config, providerId: string, out: { write(s: string): void }, opts: ConnectOptions = {}): Promise<void> {
  const settings = settingsFor(cfg, providerId);
  const store = new CredentialStore(cfg.storage.data_dir, opts.env);
  const now = opts.now ?? Date.now;
  try {
    // before the user is asked to do anything: an unwritable data_dir fails now, not after the approval
    await store.init();
    const da = await startDeviceAuthorization(settings, opts.signal);
    out.write(`To connect provider '${providerId}', open\n\n  ${da.verification_uri}\n\nand enter the code\n\n  ${da.user_code}\n\n`);
    if (da.verification_uri_complete !== undefined) out.write(`(or open ${da.verification_uri_complete}, which carries the code)\n\n`);
    out.write(`Waiting for approval; the code expires in ${duration(da.expires_in)}...\n`);
    const tokens = await pollForToken(settings, da, opts);
    await store.save(providerId, tokens);
    const expiry = tokens.expires_at === null ? 'an access token without an expiry' : `an access token that expires at ${new Date(tokens.expires_at).toISOString()} (in ${duration((tokens.expires_at - now()) / 1000)})`;
    const refresh = tokens.refresh_token === undefined ? 'no refresh token: connect again when it expires' : 'refreshed automatically';
    out.write(`Connected provider '${providerId}': ${expiry}, ${refresh}. Stored in ${store.pathFor(providerId)}\n`);
  } catch (err) {
    if (!(err instanceof Error)) throw err;
    // an fs error (an unwritable data_dir) is a reason the provider cannot be connected too
    const code = err instanceof TollgateError ? err.code : 'TOLLGATE_ERR_PROVIDER_AUTH';
    throw new TollgateError(code, `cannot connect provider '${providerId}': ${err.message}`, { cause: err });
  }
}
