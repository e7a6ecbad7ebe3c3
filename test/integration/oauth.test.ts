// An OAuth provider through the gateway: before `tollgate connect` its requests fail with TOLLGATE_ERR_PROVIDER_AUTH;
// after the device-code flow (run in process against the fake authorization server, on the gateway's data_dir) the
// upstream receives the issued access token; when the upstream refuses it (401), the next request refreshes it
// with the refresh_token grant and carries the new one. The token never reaches a row, a metric or /api/quota.

import t from 'tap';
import OpenAI from 'openai';
import { connect } from '../../src/cli/connect.js';
import { startApp } from '../helpers/app.js';
import { startFakeOAuth } from '../helpers/fake-oauth.js';
import { fakeProvider, startFakeOpenAI } from '../helpers/fake-openai.js';
import { rowOf, spyFetch } from '../helpers/clients.js';
import { tempDir } from '../helpers/tmp.js';

const auth = await startFakeOAuth(t, { pendingPolls: 1, interval: 1 });
const up = await startFakeOpenAI(t);
const dataDir = tempDir(t);
const gw = await startApp(t, { providers: { acme: fakeProvider(up.baseUrl, { group: 'subscription', auth: { type: 'oauth', oauth: auth.settings() } }) } }, { dataDir });
const spy = spyFetch();
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0, fetch: spy.fetch });
const ask = () => client.chat.completions.create({ model: 'acme/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });

t.test('not connected yet: a clear 502 that says how to connect', async (t) => {
  const err = await ask().catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.APIError && err.status === 502);
  t.match((err as InstanceType<typeof OpenAI.APIError>).error, { code: 'TOLLGATE_ERR_PROVIDER_AUTH', message: /tollgate connect acme/ });
  t.equal(up.received.length, 0, 'nothing was sent upstream');
});

t.test('after the device-code flow the upstream gets the access token', async (t) => {
  const out: string[] = [];
  await connect(gw.holder.current, 'acme', { write: (s) => void out.push(s) }, { sleep: async () => undefined });
  t.match(out.join(''), auth.userCodes[0]!, 'the user code was shown');
  const res = await ask();
  t.equal(res.choices[0]?.message.content, 'Hello from the fake upstream');
  const token = auth.issuedAccessTokens()[0]!;
  t.equal(up.received.at(-1)!.headers.authorization, `Bearer ${token}`);
  const row = await rowOf(gw, spy.last.headers.get('x-request-id')!);
  t.same([row.status, row.connection], ['success', 'oauth']);
});

t.test('a refused token is refreshed before the next request', async (t) => {
  const old = auth.issuedAccessTokens().at(-1)!;
  auth.revokeAccessTokens();
  up.next({ kind: 'error', status: 401, body: { error: { message: 'invalid token', type: 'invalid_request_error', code: 'invalid_api_key' } } });
  const err = await ask().catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.AuthenticationError, 'the 401 reaches the client of a direct request');
  const grants = auth.grants.length;
  await ask();
  t.equal(auth.grants.at(-1)?.grant_type, 'refresh_token', 'a refresh_token grant followed');
  t.equal(auth.grants.length, grants + 1, 'exactly one');
  const fresh = auth.issuedAccessTokens().at(-1)!;
  t.not(fresh, old);
  t.equal(up.received.at(-1)!.headers.authorization, `Bearer ${fresh}`, 'the new token went upstream');
  t.ok(auth.validAccessTokens().includes(fresh));
});

t.test('tokens never reach rows, metrics or /api/quota', async (t) => {
  const rows = JSON.stringify(await gw.rows());
  const metrics = await gw.metrics();
  const quota = await (await fetch(`${gw.url}/api/quota`)).text();
  for (const token of auth.issuedAccessTokens()) {
    t.notMatch(rows, token);
    t.notMatch(metrics, token);
    t.notMatch(quota, token);
  }
});
