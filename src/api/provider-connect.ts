// The console's sign-in for a provider whose `auth.oauth.flow` is pkce (admin only: /api/settings/* is admin in the
// gate). Two steps, so that the code verifier never leaves the gateway:
//
//   POST /api/settings/providers/:id/connect            { redirect_uri? }       -> { authorization_url, state, ... }
//   POST /api/settings/providers/:id/connect/complete   { callback_url } | { code, state }   -> { connected: true, ... }
//
// The browser opens authorization_url; the provider redirects to redirect_uri (the console's callback page, or the
// one registered for the client, whose address the user pastes back); the console posts what came back. A pending
// sign-in lives 10 minutes, in this process, and completes once. Tokens are saved encrypted, as `tollgate connect`
// saves them (docs/connections.md).

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import type { OAuthSettings } from '../config/types.js';
import { TollgateError } from '../core/errors.js';
import { own } from '../core/own.js';
import { CredentialStore } from '../providers/credentials.js';
import { authorizationRequest, codeFromCallback, exchangeCode } from '../providers/pkce.js';

const PENDING_MS = 10 * 60_000;
const MAX_PENDING = 64;

interface Pending {
  readonly providerId: string;
  readonly verifier: string;
  readonly redirectUri: string;
  readonly expiresAt: number;
}

const bad = (message: string, param?: string) => new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, param === undefined ? {} : { param });

function pkceSettings(config: ConfigHolder, id: string): OAuthSettings {
  const p = own(config.current.providers, id);
  if (p === undefined) throw new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no provider '${id.slice(0, 100)}' is configured`);
  const o = p.auth.type === 'oauth' ? p.auth.oauth : undefined;
  if (o?.flow !== 'pkce') throw bad(`provider '${id}' does not sign in with auth.oauth.flow: pkce`);
  return o;
}

const httpUrl = (v: unknown): v is string => typeof v === 'string' && v.length <= 2048 && /^https?:\/\/[^\s]+$/.test(v);
const body = (b: unknown): Record<string, unknown> => (b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : {});

export const providerConnectRoutes: FastifyPluginAsync<{ config: ConfigHolder; now?: () => number }> = async (app, { config, now = Date.now }) => {
  const pending = new Map<string, Pending>();
  const sweep = () => {
    for (const [state, p] of pending) if (p.expiresAt <= now()) pending.delete(state);
  };

  app.post<{ Params: { id: string } }>('/api/settings/providers/:id/connect', async (req) => {
    const settings = pkceSettings(config, req.params.id);
    const b = body(req.body);
    const redirect = b.redirect_uri ?? settings.redirect_uri;
    if (redirect === undefined) throw bad('redirect_uri is required: the console page the provider sends the browser back to (or set auth.oauth.redirect_uri)', 'redirect_uri');
    if (!httpUrl(redirect)) throw bad('redirect_uri must be an http(s) URL', 'redirect_uri');
    sweep();
    if (pending.size >= MAX_PENDING) throw new TollgateError('TOLLGATE_ERR_RATE_LIMITED', 'too many sign-ins in progress; finish one or wait 10 minutes');
    const ar = authorizationRequest(settings, redirect);
    const expiresAt = now() + PENDING_MS;
    pending.set(ar.state, { providerId: req.params.id, verifier: ar.verifier, redirectUri: ar.redirectUri, expiresAt });
    return { provider: req.params.id, authorization_url: ar.url, state: ar.state, redirect_uri: ar.redirectUri, expires_at: new Date(expiresAt).toISOString() };
  });

  app.post<{ Params: { id: string } }>('/api/settings/providers/:id/connect/complete', async (req) => {
    const settings = pkceSettings(config, req.params.id);
    const b = body(req.body);
    let state: string | null;
    let answer: string;
    if (typeof b.callback_url === 'string') {
      answer = b.callback_url;
      state = /^https?:\/\//.test(answer) ? new URL(answer).searchParams.get('state') : null;
    } else if (typeof b.code === 'string' && typeof b.state === 'string') {
      answer = `${b.code}#${b.state}`;
      state = b.state;
    } else {
      throw bad('give callback_url (the address the browser was sent back to), or code and state', 'callback_url');
    }
    sweep();
    const p = state === null ? undefined : pending.get(state);
    if (p === undefined || p.providerId !== req.params.id) throw bad('no sign-in in progress with this state (unknown, already used, or older than 10 minutes): start again', 'state');
    pending.delete(state!); // once, whatever happens next
    const code = codeFromCallback(answer, state!);
    const tokens = await exchangeCode(settings, { code, verifier: p.verifier, redirectUri: p.redirectUri });
    await new CredentialStore(config.current.storage.data_dir).save(req.params.id, tokens);
    return {
      provider: req.params.id,
      connected: true,
      expires_at: tokens.expires_at === null ? null : new Date(tokens.expires_at).toISOString(),
      refreshable: tokens.refresh_token !== undefined,
    };
  });
};
