// The OAuth device authorization grant (RFC 8628) and refresh grant against a fake authorization server on a real
// socket. Waits go through an injected sleep that records them and moves an injected clock, so no test waits
// the real intervals. OAuthSession: tokens loaded once, refreshed within 60 s of expiry (once for concurrent
// callers), saved, refreshed again after invalidate(); TOLLGATE_ERR_PROVIDER_AUTH when not connected.

import t, { type Test } from 'tap';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { CredentialStore, type OAuthTokens } from '../../src/providers/credentials.js';
import { OAuthError, OAuthSession, refreshTokens } from '../../src/providers/oauth.js';
import { pollForToken, startDeviceAuthorization, type DeviceAuthorization } from '../../src/providers/device-code.js';
import { TollgateError } from '../../src/core/errors.js';
import { FAKE_CLIENT_ID, startFakeOAuth, type FakeOAuth } from '../helpers/fake-oauth.js';
import { listenLoopback } from '../helpers/loopback.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/tmp.js';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** A clock that only the recorded sleeps (and `advance`) move. */
function fakeClock(start = 1_800_000_000_000) {
  let now = start;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    sleep: async (ms: number) => {
      waits.push(ms);
      now += ms;
    },
    advance: (ms: number) => void (now += ms),
  };
}

async function rejection(p: Promise<unknown>): Promise<TollgateError> {
  const err = await p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  if (!(err instanceof TollgateError)) throw err;
  return err;
}

/** Run the whole device flow against `fake` on `clock`. */
async function deviceFlow(fake: FakeOAuth, clock = fakeClock()): Promise<{ da: DeviceAuthorization; tokens: OAuthTokens }> {
  const da = await startDeviceAuthorization(fake.settings());
  return { da, tokens: await pollForToken(fake.settings(), da, clock) };
}

t.test('the device authorization request and its answer', async (t) => {
  const fake = await startFakeOAuth(t, { clientSecret: 'cs-1', interval: 2, deviceExpiresIn: 900 });
  const da = await startDeviceAuthorization(fake.settings());
  t.same(fake.deviceRequests, [{ client_id: FAKE_CLIENT_ID, client_secret: 'cs-1', scope: 'chat' }], 'form-encoded, client_secret_post');
  t.match(da, {
    device_code: /^dc-1-/,
    user_code: 'WDJB-MJH1',
    verification_uri: fake.deviceAuthorizationUrl.replace('/device/code', '/device'),
    verification_uri_complete: /\/device\?user_code=WDJB-MJH1$/,
    expires_in: 900,
    interval: 2,
  });

  const noScope = await startDeviceAuthorization(fake.settings({ scope: undefined }));
  t.same(fake.deviceRequests[1], { client_id: FAKE_CLIENT_ID, client_secret: 'cs-1' }, 'no scope parameter when none is configured');
  t.equal(noScope.user_code, 'WDJB-MJH2');

  const e = await rejection(startDeviceAuthorization(fake.settings({ client_secret: 'wrong' })));
  t.type(e, OAuthError);
  t.equal(e.code, 'TOLLGATE_ERR_PROVIDER_AUTH');
  t.match(e.message, /device authorization endpoint .* refused the request \(invalid_client: unknown client or wrong secret\)/);

  fake.set({ interval: null, complete: false });
  const defaults = await startDeviceAuthorization(fake.settings());
  t.equal(defaults.interval, 5, 'no interval: 5 s (RFC 8628 §3.2)');
  t.notOk('verification_uri_complete' in defaults);
});

t.test('pending, slow_down, pending, approved: the interval grows by 5 s and stays grown', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 3, slowDownOn: 2, interval: 1 });
  const clock = fakeClock();
  const start = clock.now();
  const { da, tokens } = await deviceFlow(fake, clock);
  t.same(clock.waits, [1000, 1000, 6000, 6000], 'waited the interval before each poll; slow_down added 5 s');
  t.same(fake.grants.map((g) => g.answer), ['authorization_pending', 'slow_down', 'authorization_pending', 'issued']);
  for (const g of fake.grants) {
    t.same(g.params, { grant_type: DEVICE_GRANT, device_code: da.device_code, client_id: FAKE_CLIENT_ID });
  }
  t.equal(tokens.access_token, fake.grants[3]!.access_token);
  t.same(fake.validAccessTokens(), [tokens.access_token]);
  t.match(tokens, { refresh_token: /^rt-/, token_type: 'Bearer', scope: 'chat' });
  t.equal(tokens.obtained_at, start + 14_000);
  t.equal(tokens.expires_at, start + 14_000 + 3600_000, 'expires_in from when it was obtained');
});

t.test('no interval from the server: 5 s between polls', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 2, interval: null });
  const clock = fakeClock();
  await deviceFlow(fake, clock);
  t.same(clock.waits, [5000, 5000, 5000]);
});

t.test('access_denied and expired_token end the flow with the server error', async (t) => {
  const denied = await startFakeOAuth(t, { pendingPolls: 1, deny: true });
  const clock = fakeClock();
  const e = await rejection(deviceFlow(denied, clock));
  t.type(e, OAuthError);
  t.equal(e.code, 'TOLLGATE_ERR_PROVIDER_AUTH');
  t.equal((e as OAuthError).oauthError, 'access_denied');
  t.equal(e.message, 'authorization was denied (access_denied: The user said no)');
  t.equal(denied.requests.token, 2, 'no poll after the denial');
  t.same(clock.waits, [1000, 1000]);

  const expired = await startFakeOAuth(t, { pendingPolls: 0, expire: true });
  const x = await rejection(deviceFlow(expired));
  t.equal((x as OAuthError).oauthError, 'expired_token');
  t.equal(x.message, 'the code WDJB-MJH1 expired before it was approved (expired_token: The device code has expired)');
  t.equal(expired.requests.token, 1);
});

t.test('any other error ends the flow too', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 5 });
  const da = await startDeviceAuthorization(fake.settings());
  const e = await rejection(pollForToken(fake.settings({ client_id: 'someone-else' }), da, fakeClock()));
  t.equal((e as OAuthError).oauthError, 'invalid_client');
  t.match(e.message, /token endpoint .*\/token refused the device code \(invalid_client: unknown client or wrong secret\)/);
  t.equal(fake.requests.token, 1);
});

t.test('polling stops once the device code expires', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 1000, interval: 1, deviceExpiresIn: 5 });
  const clock = fakeClock();
  const e = await rejection(deviceFlow(fake, clock));
  t.equal((e as OAuthError).oauthError, 'expired_token');
  t.equal(e.message, 'the code WDJB-MJH1 expired after 5 s without being approved');
  t.equal(fake.requests.token, 4, 'polled at 1, 2, 3 and 4 s; not at 5 s');
  t.same(clock.waits, [1000, 1000, 1000, 1000, 1000]);
});

t.test('an unreachable token endpoint doubles the interval (RFC 8628 §3.5)', async (t) => {
  const fake = await startFakeOAuth(t, { interval: 1, deviceExpiresIn: 20 });
  const da = await startDeviceAuthorization(fake.settings());
  const clock = fakeClock();
  const closed = `http://127.0.0.1:${await freePort()}/token`;
  const e = await rejection(pollForToken(fake.settings({ token_url: closed }), da, clock));
  t.match(e.message, /expired after 20 s/);
  t.same(clock.waits, [1000, 2000, 4000, 8000, 5000], 'doubled each time; the last wait stops at the expiry (15 + 5 s)');
});

t.test('a token answer that is not JSON, or has no access_token, is a clear error that quotes nothing', async (t) => {
  const fake = await startFakeOAuth(t);
  const da = await startDeviceAuthorization(fake.settings());
  let answer: (res: ServerResponse) => void = () => undefined;
  const other = await listenLoopback(
    t,
    async (req: IncomingMessage, res: ServerResponse) => {
      for await (const _ of req);
      answer(res);
    },
    (_err, res) => res.destroy(),
  );
  const settings = fake.settings({ token_url: `http://127.0.0.1:${other.port}/token` });

  // GitHub answers form-encoded unless asked for JSON
  answer = (res) => {
    res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' });
    res.end('access_token=at-SECRET-1&token_type=bearer');
  };
  const form = await rejection(pollForToken(settings, da, fakeClock()));
  t.match(form.message, /token endpoint http:\/\/127\.0\.0\.1:\d+\/token answered HTTP 200 without a JSON object \(content-type: application\/x-www-form-urlencoded\)/);
  t.notMatch(form.message, /SECRET/);

  answer = (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ token_type: 'Bearer', refresh_token: 'rt-SECRET-2' }));
  };
  const missing = await rejection(pollForToken(settings, da, fakeClock()));
  t.match(missing.message, /answered without an access_token$/);
  t.notMatch(missing.message, /SECRET/);
  const refresh = await rejection(refreshTokens(settings, 'rt-x'));
  t.match(refresh.message, /answered without an access_token$/);

  answer = (res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<h1>no</h1>');
  };
  const notFound = await rejection(pollForToken(settings, da, fakeClock()));
  t.match(notFound.message, /answered HTTP 404 without a JSON object \(content-type: text\/html\)/);
  t.equal((notFound as OAuthError).transient, false);
});

t.test('refresh with a rotating server: a new refresh token, the old one retired', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, rotateRefreshTokens: true });
  const { tokens } = await deviceFlow(fake);
  const fresh = await refreshTokens(fake.settings(), tokens.refresh_token!, { now: () => 42 });
  t.same(fake.grants.at(-1)!.params, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: FAKE_CLIENT_ID });
  t.not(fresh.access_token, tokens.access_token);
  t.not(fresh.refresh_token, tokens.refresh_token);
  t.match(fresh, { obtained_at: 42, expires_at: 42 + 3600_000, token_type: 'Bearer' });
  t.same(fake.validAccessTokens(), [fresh.access_token]);
  t.same(fake.validRefreshTokens(), [fresh.refresh_token]);

  const e = await rejection(refreshTokens(fake.settings(), tokens.refresh_token!));
  t.type(e, OAuthError);
  t.match(e, { oauthError: 'invalid_grant', transient: false, code: 'TOLLGATE_ERR_PROVIDER_AUTH' });
  t.match(e.message, /refused the refresh token \(invalid_grant: the refresh token is invalid or was revoked\)/);
});

t.test('refresh with a server that keeps the refresh token: the old one is kept', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, rotateRefreshTokens: false, clientSecret: 'cs' });
  const { tokens } = await deviceFlow(fake);
  const fresh = await refreshTokens(fake.settings(), tokens.refresh_token!);
  t.same(fake.validRefreshTokens(), [tokens.refresh_token], 'the server issued no new one');
  t.equal(fresh.refresh_token, tokens.refresh_token);
  t.equal(fake.grants.at(-1)!.params.client_secret, 'cs');
  const again = await refreshTokens(fake.settings(), fresh.refresh_token!);
  t.equal(again.refresh_token, tokens.refresh_token, 'and it keeps working');
  t.same(fake.validAccessTokens(), [again.access_token]);
});

/** A store with tokens from a device flow on `clock`, and a session on it. */
async function connected(t: Test, fake: FakeOAuth, clock = fakeClock()) {
  const dataDir = tempDir(t);
  const store = new CredentialStore(dataDir, {});
  const { tokens } = await deviceFlow(fake, clock);
  await store.save('acme', tokens);
  const session = new OAuthSession('acme', fake.settings(), store, clock.now);
  const refreshes = () => fake.grants.filter((g) => g.grant_type === 'refresh_token').length;
  return { dataDir, store, tokens, session, clock, refreshes };
}

t.test('OAuthSession: not connected until tokens are stored', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0 });
  const store = new CredentialStore(tempDir(t), {});
  const session = new OAuthSession('acme', fake.settings(), store);
  const e = await rejection(session.accessToken());
  t.equal(e.code, 'TOLLGATE_ERR_PROVIDER_AUTH');
  t.equal(e.message, "provider 'acme' is not connected: run `tollgate connect acme`");
  session.invalidate(); // nothing to invalidate: no effect

  const { tokens } = await deviceFlow(fake, fakeClock(Date.now()));
  await store.save('acme', tokens);
  t.equal(await session.accessToken(), tokens.access_token, 'a later connect is picked up without a new session');
});

t.test('OAuthSession: a fresh token is used as it is, from memory', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0 });
  const { store, tokens, session, refreshes } = await connected(t, fake);
  t.equal(await session.accessToken(), tokens.access_token);
  await store.save('acme', { ...tokens, access_token: 'at-changed-on-disk' });
  t.equal(await session.accessToken(), tokens.access_token, 'loaded once, then kept in memory');
  t.equal(refreshes(), 0);
});

t.test('OAuthSession: refreshed within 60 s of expiry, once for all concurrent callers, and saved', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, refreshDelayMs: 100 });
  const { store, tokens, session, clock, refreshes } = await connected(t, fake);
  clock.advance(3600_000 - 61_000);
  t.equal(await session.accessToken(), tokens.access_token, '61 s before expiry: no refresh');
  clock.advance(2000);
  const got = await Promise.all(Array.from({ length: 20 }, () => session.accessToken()));
  t.equal(refreshes(), 1, 'one refresh grant for 20 concurrent callers');
  t.same(new Set(got), new Set([fake.grants.at(-1)!.access_token]), 'all got the refreshed token');
  t.same(fake.validAccessTokens(), [got[0]]);
  const saved = await store.load('acme');
  t.equal(saved?.access_token, got[0], 'the refreshed tokens are saved');
  t.equal(saved?.refresh_token, fake.validRefreshTokens()[0], 'with the rotated refresh token');
  t.equal(saved?.expires_at, clock.now() + 3600_000);
  t.equal(await session.accessToken(), got[0]);
  t.equal(refreshes(), 1, 'and not refreshed again');
});

t.test('OAuthSession: invalidate() after an upstream 401 refreshes on the next call', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0 });
  const { tokens, session, refreshes } = await connected(t, fake);
  const first = await session.accessToken();
  t.equal(first, tokens.access_token);
  fake.revokeAccessTokens();
  t.same(fake.validAccessTokens(), [], 'the upstream would now answer 401');
  session.invalidate(first);
  const second = await session.accessToken();
  t.not(second, first);
  t.same(fake.validAccessTokens(), [second]);
  t.equal(refreshes(), 1);

  session.invalidate(first); // a late 401 for the token already replaced
  t.equal(await session.accessToken(), second, 'does not refresh again');
  t.equal(refreshes(), 1);
  session.invalidate();
  const third = await session.accessToken();
  t.not(third, second, 'invalidate() without a token always refreshes');
  t.equal(refreshes(), 2);
});

t.test('OAuthSession: a refused refresh means not connected; a new connect is picked up', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0 });
  const { store, session, clock } = await connected(t, fake);
  fake.revokeRefreshTokens();
  clock.advance(3600_000);
  const e = await rejection(session.accessToken());
  t.equal(e.code, 'TOLLGATE_ERR_PROVIDER_AUTH');
  t.match(e.message, /^provider 'acme' is not connected: run `tollgate connect acme` \(token endpoint .* refused the refresh token \(invalid_grant: /);
  t.notMatch(e.message, /rt-|at-/, 'no token in the message');

  const { tokens } = await deviceFlow(fake, fakeClock(clock.now()));
  await store.save('acme', tokens);
  t.equal(await session.accessToken(), tokens.access_token, 'read from the store again');
});

t.test('OAuthSession: tokens another process refreshed and saved are used instead of refreshing the retired ones', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, rotateRefreshTokens: true });
  const { dataDir, tokens, session: a, clock } = await connected(t, fake);
  const b = new OAuthSession('acme', fake.settings(), new CredentialStore(dataDir, {}), clock.now);
  t.equal(await a.accessToken(), tokens.access_token);
  t.equal(await b.accessToken(), tokens.access_token, 'both processes hold the same tokens');
  clock.advance(3600_000);
  const fromA = await a.accessToken();
  t.not(fromA, tokens.access_token, 'A refreshed, and the server retired the refresh token B holds');
  t.equal(await b.accessToken(), fromA, 'B reads the file before refreshing and uses what A saved');
  t.same(fake.grants.filter((g) => g.grant_type === 'refresh_token').map((g) => g.answer), ['issued'], 'without sending the retired refresh token');
});

t.test('OAuthSession: no refresh token and expired means not connected', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, issueRefreshToken: false });
  const { session, clock, tokens } = await connected(t, fake);
  t.equal(tokens.refresh_token, undefined);
  t.equal(await session.accessToken(), tokens.access_token);
  clock.advance(3600_000 - 30_000);
  t.equal(await session.accessToken(), tokens.access_token, 'usable to the end');
  clock.advance(30_000);
  const e = await rejection(session.accessToken());
  t.equal(e.message, "provider 'acme' is not connected: run `tollgate connect acme` (the access token expired and the server issued no refresh token)");
  t.equal(fake.grants.filter((g) => g.grant_type === 'refresh_token').length, 0);
});

t.test('OAuthSession: an unreachable token endpoint keeps a token that has not expired yet', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0 });
  const clock = fakeClock();
  const { store, tokens } = await connected(t, fake, clock);
  const closed = fake.settings({ token_url: `http://127.0.0.1:${await freePort()}/token` });
  const session = new OAuthSession('acme', closed, store, clock.now);
  clock.advance(3600_000 - 30_000);
  t.equal(await session.accessToken(), tokens.access_token, '30 s left: the refresh failed, the token is still good');
  clock.advance(30_000);
  const e = await rejection(session.accessToken());
  t.equal(e.code, 'TOLLGATE_ERR_TOKEN_REFRESH_FAILED');
  t.match(e.message, /^provider 'acme': the access token could not be refreshed \(token endpoint .* cannot be reached \(ECONNREFUSED\)\); the next request after 5 s tries again$/);
  session.invalidate();
  clock.advance(-60_000);
  await t.rejects(session.accessToken(), /could not be refreshed/, 'an invalidated token is not used even before its expiry');
});
