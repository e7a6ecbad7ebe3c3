// `tollgate connect PROVIDER [--config FILE]` on the built CLI (dist/main.js; `npm run build` first) against a fake
// authorization server on a real socket (it sends interval 1, so a run takes a second or two). It prints the
// verification URI and user code, waits for the approval, stores the tokens encrypted under storage.data_dir, and
// exits 0; it never prints a token, starts no server and opens no store. An OAuthSession on the same data_dir then
// refreshes the stored tokens through the server once they are due.

import t, { type Test } from 'tap';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CredentialStore } from '../../src/providers/credentials.js';
import { OAuthSession } from '../../src/providers/oauth.js';
import { startFakeOAuth, type FakeOAuth } from '../helpers/fake-oauth.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/tmp.js';
import { runCli } from '../helpers/cli.js';


const run = runCli;

const yaml = (fake: FakeOAuth, dataDir: string, extra = '') => `
server: { host: 127.0.0.1, port: 1 }
storage:
  data_dir: ${JSON.stringify(dataDir)}
providers:
  acme:
    group: subscription
    format: openai
    base_url: http://127.0.0.1:9/v1
    auth:
      type: oauth
      oauth:
        device_authorization_url: ${fake.deviceAuthorizationUrl}
        token_url: ${fake.tokenUrl}
        client_id: tollgate-test-client
        scope: chat
  keyed:
    group: paid
    format: openai
    base_url: http://127.0.0.1:9/v1
    auth: { type: api_key, key: sk-1 }
${extra}`;

function setup(t: Test, fake: FakeOAuth, extra = '') {
  const dir = tempDir(t);
  const dataDir = join(dir, 'data');
  const file = join(dir, 'tollgate.yaml');
  writeFileSync(file, yaml(fake, dataDir, extra));
  return { dir, dataDir, file };
}

t.test('connect: prints the code, stores the tokens encrypted, exits 0; a session refreshes them later', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 1, interval: 1, tokenExpiresIn: 3600 });
  const { dir, dataDir, file } = setup(t, fake);
  const r = await run(t, ['connect', 'acme', '--config', file], { cwd: dir });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr, '');
  const verification = fake.deviceAuthorizationUrl.replace('/device/code', '/device');
  t.match(r.stdout, `To connect provider 'acme', open\n\n  ${verification}\n\nand enter the code\n\n  WDJB-MJH1\n`);
  t.match(r.stdout, `(or open ${verification}?user_code=WDJB-MJH1, which carries the code)`);
  t.match(r.stdout, 'Waiting for approval; the code expires in 10 min...');
  t.match(r.stdout, /Connected provider 'acme': an access token that expires at \d{4}-\d\d-\d\dT[\d:.]+Z \(in 60 min\), refreshed automatically\./);
  t.same(fake.grants.map((g) => g.answer), ['authorization_pending', 'issued']);
  const issued = fake.issuedAccessTokens();
  t.equal(issued.length, 1);
  for (const secret of [issued[0]!, ...fake.validRefreshTokens()]) {
    t.notMatch(r.stdout, secret, 'no token is printed');
  }

  const enc = join(dataDir, 'credentials', 'acme.json.enc');
  t.ok(existsSync(enc), 'the encrypted file exists');
  t.equal(statSync(enc).mode & 0o777, 0o600);
  t.notMatch(readFileSync(enc, 'utf8'), issued[0]!, 'and does not hold the token in clear');
  t.same(readdirSync(dataDir).sort(), ['credentials', 'secret.key'], 'no store was opened under data_dir');

  // the gateway process's side: same data_dir, the clock 2 h later
  const store = new CredentialStore(dataDir, {});
  const stored = await store.load('acme');
  t.equal(stored?.access_token, issued[0]);
  const session = new OAuthSession('acme', fake.settings(), store, () => Date.now() + 2 * 3600_000);
  const token = await session.accessToken();
  const refresh = fake.grants.at(-1)!;
  t.equal(refresh.grant_type, 'refresh_token');
  t.equal(refresh.params.refresh_token, stored?.refresh_token, 'refreshed with the stored refresh token');
  t.equal(token, refresh.access_token, 'the session returns the token the refresh grant issued');
  t.not(token, issued[0]);
  t.same(fake.validAccessTokens(), [token]);
  t.equal((await store.load('acme'))?.access_token, token, 'and saved it');
});

t.test('connect with TOLLGATE_SECRET_KEY: no key file; the same key is needed to read the tokens', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, interval: 1, tokenExpiresIn: null, issueRefreshToken: false, complete: false });
  const { dir, dataDir, file } = setup(t, fake);
  const r = await run(t, ['connect', `--config=${file}`, 'acme'], { cwd: dir, env: { TOLLGATE_SECRET_KEY: 'cli-test-secret' } });
  t.equal(r.code, 0, r.stderr);
  t.notMatch(r.stdout, /or open/, 'no verification_uri_complete: no second URL');
  t.match(r.stdout, "Connected provider 'acme': an access token without an expiry, no refresh token: connect again when it expires.");
  t.same(readdirSync(dataDir), ['credentials'], 'no secret.key');
  const token = fake.issuedAccessTokens()[0];
  t.equal((await new CredentialStore(dataDir, { TOLLGATE_SECRET_KEY: 'cli-test-secret' }).load('acme'))?.access_token, token);
  await t.rejects(new CredentialStore(dataDir, {}).load('acme'), { code: 'TOLLGATE_ERR_PROVIDER_AUTH' });
});

t.test('connect: a denial exits 1 with the server error and stores nothing', async (t) => {
  const fake = await startFakeOAuth(t, { pendingPolls: 0, interval: 1, deny: true });
  const { dir, dataDir, file } = setup(t, fake);
  const r = await run(t, ['connect', 'acme', '-c', file], { cwd: dir });
  t.equal(r.code, 1);
  t.match(r.stdout, 'WDJB-MJH1', 'the code was shown');
  t.equal(r.stderr, "cannot connect provider 'acme': authorization was denied (access_denied: The user said no)\n");
  t.notOk(existsSync(join(dataDir, 'credentials', 'acme.json.enc')));
});

t.test('connect: an unknown provider, or one that is not oauth, exits 1 before anything is requested', async (t) => {
  const fake = await startFakeOAuth(t);
  const { dir, dataDir, file } = setup(t, fake);
  const unknown = await run(t, ['connect', 'nope', '--config', file], { cwd: dir });
  t.equal(unknown.code, 1);
  t.equal(unknown.stderr, "unknown provider 'nope' (configured: acme, keyed)\n");
  const keyed = await run(t, ['connect', 'keyed', '--config', file], { cwd: dir });
  t.equal(keyed.code, 1);
  t.equal(keyed.stderr, "provider 'keyed' has auth.type api_key; `tollgate connect` is for providers with auth.type oauth\n");
  const proto = await run(t, ['connect', 'constructor', '--config', file], { cwd: dir });
  t.equal(proto.code, 1);
  t.equal(proto.stderr, "unknown provider 'constructor' (configured: acme, keyed)\n");

  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, yaml(fake, dataDir, '  bare:\n    group: paid\n    format: openai\n    base_url: http://127.0.0.1:9/v1\n    auth: { type: oauth }\n'));
  const invalid = await run(t, ['connect', 'acme', '--config', bad], { cwd: dir });
  t.equal(invalid.code, 1, 'an invalid config file is refused as by serve');
  t.match(invalid.stderr, `invalid config ${bad}:\n  - providers.bare.auth.oauth: is required when auth.type is oauth`);

  t.equal(fake.requests.device + fake.requests.token, 0, 'the authorization server was never asked');
  t.notOk(existsSync(dataDir), 'data_dir was not touched');
});

t.test('connect: an unreachable authorization server exits 1 with the reason', async (t) => {
  const fake = await startFakeOAuth(t);
  const { dir, file } = setup(t, fake);
  const closed = `http://127.0.0.1:${await freePort()}/device/code`;
  writeFileSync(file, readFileSync(file, 'utf8').replace(fake.deviceAuthorizationUrl, closed));
  const r = await run(t, ['connect', 'acme', '--config', file], { cwd: dir });
  t.equal(r.code, 1);
  t.equal(r.stderr, `cannot connect provider 'acme': device authorization endpoint ${closed} cannot be reached (ECONNREFUSED)\n`);
});

t.test('connect: arguments', async (t) => {
  const dir = tempDir(t);
  const help = await run(t, ['--help'], { cwd: dir });
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: tollgate \[--config FILE\]\n\s+tollgate check-config \[FILE\]\n\s+tollgate connect PROVIDER \[--config FILE\]\n/);
  const none = await run(t, ['connect'], { cwd: dir });
  t.equal(none.code, 1);
  t.match(none.stderr, /^connect needs a PROVIDER\nusage: tollgate/);
  const two = await run(t, ['connect', 'a', 'b'], { cwd: dir });
  t.equal(two.code, 1);
  t.match(two.stderr, /^unknown argument 'b'/);
  const flag = await run(t, ['connect', '--port', '1'], { cwd: dir });
  t.equal(flag.code, 1);
  t.match(flag.stderr, /^unknown argument '--port'/);
  const late = await run(t, ['check-config', 'connect'], { cwd: dir });
  t.equal(late.code, 1, 'connect is a command only in first place');
  t.match(late.stderr, /invalid config connect/);
  const missing = await run(t, ['connect', 'acme', '--config', join(dir, 'nope.yaml')], { cwd: dir });
  t.equal(missing.code, 1);
  t.match(missing.stderr, /invalid config .*nope\.yaml:\n {2}- \(file\): cannot read/);
});
