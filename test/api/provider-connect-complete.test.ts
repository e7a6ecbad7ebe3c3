// The console's sign-in completion (api/provider-connect.ts, POST .../connect/complete) on bad input, against the
// fake authorization server on a real socket: what the client posts wrong is a 400 in the one error shape naming the
// field (never a 500 or a 502), and the pending sign-in survives it, so the right answer still completes it. The
// provider's invalid_grant is the client's code, a 400 too, for 5 refusals; an `error` in the callback ends the
// sign-in; an unreachable token endpoint is a 502 that keeps it, a refused client registration a 502 that ends it.

import t, { type Test } from 'tap';
import { request } from 'undici';
import { startApp } from '../helpers/app.js';
import { startFakeAuthorizationServer } from '../helpers/fake-authorization-server.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/tmp.js';
import { CredentialStore } from '../../src/providers/credentials.js';

const CALLBACK = 'http://127.0.0.1:4000/console/oauth/callback';
const ADMIN = 'admin-key-0123456789abcdef';
const as = await startFakeAuthorizationServer(t, { redirectUris: [CALLBACK] });
const s = as.settings();
const dataDir = tempDir(t);
const closedPort = await freePort();
const pkce = (extra: Record<string, unknown> = {}) => ({
  group: 'subscription', format: 'openai', base_url: 'http://127.0.0.1:9/v1',
  auth: { type: 'oauth', oauth: { flow: 'pkce', authorization_url: s.authorization_url, token_url: s.token_url, client_id: s.client_id, ...extra } },
});
const gw = await startApp(t, {
  server: { api_keys: [{ name: 'admin', key: ADMIN, role: 'admin' }] },
  providers: {
    acme: pkce(),
    down: pkce({ token_url: `http://127.0.0.1:${closedPort}/token` }),
    stranger: pkce({ client_id: 'a-client-the-server-does-not-know' }),
  },
}, { dataDir });

type Json = Record<string, unknown> & { error?: Record<string, unknown> };

async function post(path: string, body: unknown): Promise<{ status: number; json: Json }> {
  const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, body: JSON.stringify(body) });
  return { status: res.statusCode, json: (await res.body.json()) as Json };
}

const start = async (id = 'acme') => {
  const r = await post(`/api/settings/providers/${id}/connect`, { redirect_uri: CALLBACK });
  if (r.status !== 200) throw new Error(`connect answered ${r.status}`);
  return { state: String(r.json.state), url: String(r.json.authorization_url) };
};
const complete = (body: unknown, id = 'acme') => post(`/api/settings/providers/${id}/connect/complete`, body);

/** A 400 INVALID_REQUEST in the documented shape (docs/errors.md) whose param is `param`. */
function refused(t: Test, r: { status: number; json: Json }, param: string, what: string): void {
  t.equal(r.status, 400, `${what}: 400`);
  t.same(Object.keys(r.json.error ?? {}).sort(), ['code', 'message', 'param', 'request_id', 'type'], `${what}: the one error shape`);
  t.match(r.json.error, { code: 'TOLLGATE_ERR_INVALID_REQUEST', type: 'invalid_request_error', param, message: String }, `${what}: names ${param}`);
}

/** The pending sign-in is still there: the browser's real callback completes it. */
async function stillCompletes(t: Test, url: string): Promise<void> {
  const done = await complete({ callback_url: await as.authorize(url) });
  t.match(done, { status: 200, json: { provider: 'acme', connected: true } }, 'the same sign-in still completes');
  const tokens = await new CredentialStore(dataDir).load('acme');
  t.ok(tokens !== null && as.isValidAccessToken(tokens.access_token), 'a valid token is stored');
}

t.test('a callback_url that is not a URL is a 400 naming callback_url, and the sign-in stays', async (t) => {
  const { state, url } = await start();
  refused(t, await complete({ callback_url: 'http://[' }), 'callback_url', '"http://["');
  refused(t, await complete({ callback_url: `http://[::1/cb?state=${state}` }), 'callback_url', 'an unclosed IPv6 host with the live state');
  refused(t, await complete({ callback_url: 'not an address' }), 'callback_url', 'plain text');
  refused(t, await complete({ callback_url: 42 }), 'callback_url', 'a number');
  refused(t, await complete({ callback_url: `${CALLBACK}?code=x` }), 'callback_url', 'no state');
  await stillCompletes(t, url);
});

t.test('a callback with the live state but no code is a 400 naming callback_url, and the sign-in stays', async (t) => {
  const { state, url } = await start();
  const grants = as.grants.length;
  refused(t, await complete({ callback_url: `${CALLBACK}?state=${state}` }), 'callback_url', 'no code');
  refused(t, await complete({ callback_url: `?code=&state=${state}` }), 'callback_url', 'an empty code in a query string');
  t.equal(as.grants.length, grants, 'nothing was sent to the token endpoint');
  await stillCompletes(t, url);
});

t.test('{ code, state }: a malformed or mistyped code is a 400 naming code, and the sign-in stays', async (t) => {
  const { state, url } = await start();
  const grants = as.grants.length;
  refused(t, await complete({ code: 'bad\u0001code', state }), 'code', 'a control character');
  refused(t, await complete({ code: 'x'.repeat(2049), state }), 'code', 'a 2049-character code');
  refused(t, await complete({ code: '   ', state }), 'code', 'a blank code');
  refused(t, await complete({ code: 7, state }), 'code', 'a number');
  refused(t, await complete({ code: 'abc' }), 'state', 'no state');
  t.equal(as.grants.length, grants, 'none of these reached the token endpoint');
  const typo = await complete({ code: 'has space', state });
  refused(t, typo, 'code', 'a code the provider refuses (invalid_grant)');
  t.match(typo.json.error?.message, /invalid_grant/, 'the message gives the provider\'s reason');
  t.equal(as.grants.at(-1)?.answer, 'invalid_grant');
  await stillCompletes(t, url);
});

t.test('refused codes end the sign-in after 5; an error in the callback ends it at once', async (t) => {
  const { state } = await start();
  for (let i = 1; i <= 5; i++) refused(t, await complete({ code: `wrong-${i}`, state }), 'code', `refused code ${i}`);
  refused(t, await complete({ code: 'wrong-6', state }), 'state', 'the sixth try finds no sign-in');
  t.equal(as.grants.filter((g) => g.params.code === 'wrong-6').length, 0, 'the sixth code was not sent');

  as.set({ deny: true });
  try {
    const denied = await start();
    const back = await as.authorize(denied.url);
    const r = await complete({ callback_url: back });
    refused(t, r, 'callback_url', 'error=access_denied in the callback');
    t.match(r.json.error?.message, /access_denied: the user said no/);
    refused(t, await complete({ callback_url: `${CALLBACK}?code=late&state=${denied.state}` }), 'state', 'the denied sign-in is over');
  } finally {
    as.set({ deny: false });
  }
});

t.test('the provider\'s failures: unreachable is a 502 that keeps the sign-in; a refused client a 502 that ends it', async (t) => {
  const down = await start('down');
  for (const attempt of ['first', 'second']) {
    const r = await complete({ callback_url: `${CALLBACK}?code=c1&state=${down.state}` }, 'down');
    t.equal(r.status, 502, `${attempt} try against an unreachable token endpoint: 502`);
    t.match(r.json.error, { code: 'TOLLGATE_ERR_PROVIDER_AUTH', message: /cannot be reached/ });
  }
  const stranger = await start('stranger');
  const r = await complete({ callback_url: `${CALLBACK}?code=c1&state=${stranger.state}` }, 'stranger');
  t.equal(r.status, 502, 'invalid_client: the registration is at fault, not the client\'s input');
  t.match(r.json.error, { code: 'TOLLGATE_ERR_PROVIDER_AUTH', message: /invalid_client/ });
  refused(t, await complete({ callback_url: `${CALLBACK}?code=c1&state=${stranger.state}` }, 'stranger'), 'state', 'that sign-in is over');
});

t.test('the disk: an unwritable credentials directory refuses the start; a save that fails keeps the tokens for a retry', async (t) => {
  const { mkdirSync, rmSync, writeFileSync, existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const creds = join(dataDir, 'credentials');
  // a file where the directory must be: the start is refused before the user is sent to authorise
  rmSync(creds, { recursive: true, force: true });
  writeFileSync(creds, 'not a directory');
  try {
    const r = await post('/api/settings/providers/acme/connect', { redirect_uri: CALLBACK });
    t.equal(r.status, 500, 'an unwritable data_dir is the gateway\'s fault, said before the sign-in starts');
    t.same(Object.keys(r.json.error ?? {}).sort(), ['code', 'message', 'param', 'request_id', 'type'], 'the one error shape');
    t.match(r.json.error?.message, /storage\.data_dir\/credentials cannot be written \(E[A-Z]+\)/);
    t.notMatch(r.json.error?.message, dataDir, 'no file path in the answer');
  } finally {
    rmSync(creds, { force: true });
  }

  // the save fails after the exchange (the file's place is taken by a directory): the code is spent, the tokens kept
  const { url } = await start();
  const back = await as.authorize(url);
  mkdirSync(join(creds, 'acme.json.enc', 'in-the-way'), { recursive: true });
  const exchanged = as.grants.length;
  const failed = await complete({ callback_url: back });
  t.equal(failed.status, 500, 'the failed save is a 500 in the one shape');
  t.match(failed.json.error, { code: 'TOLLGATE_ERR_INTERNAL', message: /could not be saved .*post the same callback again/ });
  t.equal(as.grants.length, exchanged + 1, 'the code was exchanged once');
  rmSync(join(creds, 'acme.json.enc'), { recursive: true, force: true });
  const again = await complete({ callback_url: back });
  t.match(again, { status: 200, json: { provider: 'acme', connected: true } }, 'the same callback completes once the disk is fixed');
  t.equal(as.grants.length, exchanged + 1, 'without a second exchange (the code was spent)');
  const tokens = await new CredentialStore(dataDir).load('acme');
  t.ok(tokens !== null && as.isValidAccessToken(tokens.access_token), 'the tokens the first exchange bought are stored');
  t.ok(existsSync(join(creds, 'acme.json.enc')));
  refused(t, await complete({ callback_url: back }), 'state', 'and the sign-in is over');
});
