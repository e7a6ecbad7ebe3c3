// `tollgate connect <provider>`: run the provider's OAuth sign-in (`auth.oauth.flow`: the device authorization grant,
// or the authorization code grant with PKCE, connect-pkce.ts) and store its tokens, encrypted, under
// storage.data_dir. Prints what the user must open and type; never a token.

import type { Config, OAuthSettings } from '../config/types.js';
import { CredentialStore } from '../providers/credentials.js';
import { pollForToken, startDeviceAuthorization, type PollOptions } from '../providers/device-code.js';
import { TollgateError } from '../core/errors.js';
import { signInWithPkce, type PkceOptions } from './connect-pkce.js';

export interface ConnectOptions extends PollOptions, Omit<PkceOptions, 'now' | 'signal'> {
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

async function deviceCode(providerId: string, settings: OAuthSettings, out: { write(s: string): void }, opts: ConnectOptions) {
  const da = await startDeviceAuthorization(settings, opts.signal);
  out.write(`To connect provider '${providerId}', open\n\n  ${da.verification_uri}\n\nand enter the code\n\n  ${da.user_code}\n\n`);
  if (da.verification_uri_complete !== undefined) out.write(`(or open ${da.verification_uri_complete}, which carries the code)\n\n`);
  out.write(`Waiting for approval; the code expires in ${duration(da.expires_in)}...\n`);
  return pollForToken(settings, da, opts);
}

/** Connect `providerId`: prints what to open (and, for the device flow, the code), waits for the sign-in, saves the tokens. */
export async function connect(cfg: Config, providerId: string, out: { write(s: string): void }, opts: ConnectOptions = {}): Promise<void> {
  const settings = settingsFor(cfg, providerId);
  const store = new CredentialStore(cfg.storage.data_dir, opts.env);
  const now = opts.now ?? Date.now;
  try {
    // before the user is asked to do anything: an unwritable data_dir fails now, not after the approval
    await store.init();
    const tokens = settings.flow === 'pkce' ? await signInWithPkce(providerId, settings, out, opts) : await deviceCode(providerId, settings, out, opts);
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
