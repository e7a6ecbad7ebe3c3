// POST /api/admin/export and /api/admin/import behind the gate (only a re-authentication token of an admin key),
// what the archive holds (tar lists manifest.json, config.yaml, one file per table; no secret of the config file
// anywhere in its bytes), and how import refuses what is not an archive. Real sockets, the real embedded store.

import t from 'tap';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { demoProvidersYaml, startApp } from '../helpers/app.js';
import { errorCode, send } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/tmp.js';
import { redactConfigText } from '../../src/config/redact.js';
import { tarHeader } from '../../src/store/tar.js';
import { ArchiveTooLarge, unpack } from '../../src/store/archive.js';
import { Readable } from 'node:stream';

const KEY = 'k-admin-0123456789abcdef';
const USER_KEY = 'k-user-0123456789abcdef';
// Literal secrets in the config file: none may leave in the archive.
const SECRETS = ['sk-literal-provider-key-77', 'sk-connection-key-88', 'whsec_literal_99', 'oauth-client-secret-66', 'hdr-token-55', 'smtp-pass-44', 'src-bearer-33'];

const dir = tempDir(t);
const configFile = join(dir, 'config.yaml');
const configText = `# the operator's comment stays
server:
  api_keys:
    - { name: admin, key: "${KEY}", role: admin }
    - { name: user, key: "${USER_KEY}" }
${demoProvidersYaml()}  upstream:
    name: Upstream
    group: paid
    format: openai
    base_url: http://127.0.0.1:9/v1
    auth:
      type: api_key
      keys:
        - { name: one, key: ${SECRETS[0]} }   # a literal key
        - { name: two, key: "${SECRETS[1]}" }
        - { name: env, key: "\${UPSTREAM_KEY}" }
    headers: { Authorization: "Bearer ${SECRETS[4]}", X-Trace: keep-me }
    quota:
      kind: daily_requests
      limit: 10
      source: { url: http://127.0.0.1:9/usage, headers: { x-api-key: ${SECRETS[6]} } }
    models: { m: { kind: llm } }
  oauthy:
    name: OAuthy
    group: subscription
    format: openai
    base_url: http://127.0.0.1:9/v1
    auth: { type: oauth, oauth: { device_authorization_url: http://127.0.0.1:9/d, token_url: http://127.0.0.1:9/t, client_id: cid, client_secret: ${SECRETS[3]} } }
    models: { m: { kind: llm } }
alerts:
  channels:
    webhook: { url: http://127.0.0.1:9/hook, secret: ${SECRETS[2]} }
    email: { smtp_url: "smtp://ops:${SECRETS[5]}@127.0.0.1:25", from: a@b.c, to: [d@e.f] }
`;
writeFileSync(configFile, configText);
const { parse } = await import('yaml');
const gw = await startApp(t, parse(configText) as Record<string, unknown>, { configFile, env: { UPSTREAM_KEY: 'from-env-0000' } });

const token = async (key = KEY): Promise<string> => (JSON.parse((await send(gw.url, 'POST', '/api/admin/reauth', { headers: { authorization: `Bearer ${key}` } })).body) as { token: string }).token;

async function exportBytes(bearer: string): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(`${gw.url}/api/admin/export`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` } });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

t.test('the gate: only a live re-authentication token of an admin key opens export and import', async (t) => {
  for (const path of ['/api/admin/export', '/api/admin/import']) {
    const plain = await send(gw.url, 'POST', path, { headers: { authorization: `Bearer ${KEY}` } });
    t.equal(plain.status, 401, `${path} with the admin key itself`);
    t.equal(errorCode(plain), 'TOLLGATE_ERR_REAUTH_REQUIRED');
    const none = await send(gw.url, 'POST', path);
    t.equal(none.status, 401, `${path} with nothing`);
    const madeUp = await send(gw.url, 'POST', path, { headers: { authorization: `Bearer tgr_${'A'.repeat(43)}` } });
    t.equal(madeUp.status, 401, `${path} with a made-up token`);
    t.equal(errorCode(madeUp), 'TOLLGATE_ERR_REAUTH_REQUIRED');
  }
  const asUser = await send(gw.url, 'POST', '/api/admin/reauth', { headers: { authorization: `Bearer ${USER_KEY}` } });
  t.equal(asUser.status, 403, 'a user key cannot re-authenticate');
  t.equal(errorCode(asUser), 'TOLLGATE_ERR_FORBIDDEN');
  const ok = await exportBytes(await token());
  t.equal(ok.status, 200, 'with a token: 200');
  t.equal(ok.headers.get('content-type'), 'application/gzip');
  t.match(ok.headers.get('content-disposition'), /^attachment; filename="tollgate-export-[0-9TZ-]+\.tar\.gz"$/);

  // the key the token is bound to is removed from the config: its token stops working at once
  const live = await token();
  const cfg = gw.holder.current;
  gw.holder.replace({ ...cfg, server: { ...cfg.server, api_keys: [{ name: 'other-admin', key: 'k-other-admin-0123456789', role: 'admin' }, cfg.server.api_keys[1]!] } });
  t.teardown(() => gw.holder.replace(cfg));
  const gone = await send(gw.url, 'POST', '/api/admin/export', { headers: { authorization: `Bearer ${live}` } });
  t.equal(gone.status, 401, 'a token of a removed key');
  t.equal(errorCode(gone), 'TOLLGATE_ERR_REAUTH_REQUIRED');
  gw.holder.replace(cfg);
});

t.test('the archive: manifest, config, one file per data table; no secret of the config in any byte', async (t) => {
  const chat = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${USER_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(chat.status, 200);
  await gw.flush();
  const { body } = await exportBytes(await token());
  const file = join(tempDir(t), 'a.tar.gz');
  writeFileSync(file, body);
  const listed = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n');
  t.same(listed, ['manifest.json', 'config.yaml', 'tables/alert_deliveries.native', 'tables/alerts.native', 'tables/requests.native'], 'tar -tzf');
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', file, 'manifest.json'], { encoding: 'utf8' })) as { tables: Record<string, { rows: number }>; config: { redacted: string[] } };
  t.match(manifest, { format: 'tollgate-export', format_version: 1, tollgate_version: /^\d+\.\d+\.\d+/, schema_version: MIGRATIONS.at(-1)!.version, database: 'tollgate', config: { source: 'file' } });
  t.same(Object.keys(manifest.tables).sort(), ['alert_deliveries', 'alerts', 'requests'], 'no rollup, no view, no schema_migrations');
  t.equal(manifest.tables.requests.rows, 1);
  t.same(manifest.config.redacted.sort(), [
    'alerts.channels.email.smtp_url', 'alerts.channels.webhook.secret', 'providers.oauthy.auth.oauth.client_secret',
    'providers.upstream.auth.keys.0.key', 'providers.upstream.auth.keys.1.key', 'providers.upstream.headers.Authorization',
    'providers.upstream.quota.source.headers.x-api-key', 'server.api_keys.0.key', 'server.api_keys.1.key',
  ]);
  const config = execFileSync('tar', ['-xzOf', file, 'config.yaml'], { encoding: 'utf8' });
  t.match(config, "# the operator's comment stays");
  t.match(config, '# a literal key');
  t.match(config, 'key: "${TOLLGATE_REDACTED_PROVIDERS_UPSTREAM_AUTH_KEYS_0_KEY}"');
  t.match(config, 'key: "${UPSTREAM_KEY}"', 'a ${VAR} reference is kept');
  t.match(config, 'X-Trace: keep-me', 'a header that is not a credential is kept');
  const everything = [body, gunzipSync(body)];
  for (const secret of [...SECRETS, KEY, USER_KEY, 'from-env-0000']) {
    t.notOk(everything.some((b) => b.includes(secret)), `${secret} appears nowhere in the archive`);
  }
});

t.test('redaction keeps ${VAR} references only when nothing literal is left', async (t) => {
  const { text, redacted } = redactConfigText('a:\n  token: "${T:-literal-default}"\n  password: "${P}"\n  api_key: 12345\n  headers: { authorization: "Bearer ${K}" }\n');
  t.same(redacted, ['a.token', 'a.api_key']);
  t.notMatch(text, 'literal-default');
  t.notMatch(text, '12345');
  t.match(text, 'password: "${P}"');
});

t.test('import refuses what is not an archive, and an archive over the limit', async (t) => {
  const post = async (body: Buffer | string, type = 'application/gzip') =>
    send(gw.url, 'POST', '/api/admin/import', { headers: { authorization: `Bearer ${await token()}`, 'content-type': type }, body: body as string });
  const json = await send(gw.url, 'POST', '/api/admin/import', { headers: { authorization: `Bearer ${await token()}` }, body: '{}' });
  t.equal(json.status, 415, 'a JSON body');
  const notGzip = await post('not an archive');
  t.equal(notGzip.status, 400);
  t.equal(errorCode(notGzip), 'TOLLGATE_ERR_INVALID_REQUEST');
  const traversal = Buffer.concat([tarHeader('../../escape.txt', 1, Date.now()), Buffer.alloc(512, 120), Buffer.alloc(1024)]);
  const escaped = await fetch(`${gw.url}/api/admin/import`, { method: 'POST', headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/gzip' }, body: gzipSync(traversal) });
  t.equal(escaped.status, 400, 'an entry outside the archive layout');
  t.match(await escaped.text(), /unexpected entry '..\/..\/escape.txt'/);
  const noManifest = Buffer.concat([tarHeader('config.yaml', 1, Date.now()), Buffer.alloc(512, 120), Buffer.alloc(1024)]);
  const res = await fetch(`${gw.url}/api/admin/import`, { method: 'POST', headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/gzip' }, body: gzipSync(noManifest) });
  t.equal(res.status, 400);
  t.match(await res.text(), /the archive has no manifest\.json/);
  // a manifest whose row count does not match its file: nothing is imported
  const { body } = await exportBytes(await token());
  const rows = await gw.rows();
  const tampered = retar(gunzipSync(body), (name, data) => (name === 'manifest.json' ? Buffer.from(data.toString().replace(/"rows": 1\b/, '"rows": 2')) : data));
  const bad = await fetch(`${gw.url}/api/admin/import`, { method: 'POST', headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/gzip' }, body: gzipSync(tampered) });
  t.equal(bad.status, 400);
  t.match(await bad.text(), /holds 1 rows; the manifest says 2/);
  t.same(await gw.rows(), rows, 'the store is unchanged');
  t.same(readFileSync(configFile, 'utf8'), configText, 'the config file is untouched');
  // the size limit counts compressed and unpacked bytes
  await t.rejects(unpack(Readable.from([body]), tempDir(t), 1000), ArchiveTooLarge, 'over the limit');
  const zeros = gzipSync(Buffer.alloc(1_000_000));
  t.ok(zeros.length < 5000);
  await t.rejects(unpack(Readable.from([zeros]), tempDir(t), 100_000), ArchiveTooLarge, 'a small upload that unpacks past the limit');
  t.ok((await unpack(Readable.from([body]), tempDir(t), 10_000_000)).files.has('requests'), 'under the limit');
});

/** A tar with every entry's data passed through `edit`. */
function retar(tar: Buffer, edit: (name: string, data: Buffer) => Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at + 512 <= tar.length && !tar.subarray(at, at + 512).every((b) => b === 0)) {
    const h = tar.subarray(at, at + 512);
    const name = h.subarray(0, 100).toString().replace(/\0.*$/s, '');
    const size = parseInt(h.subarray(124, 136).toString().replace(/\0.*$/s, ''), 8);
    const data = edit(name, tar.subarray(at + 512, at + 512 + size));
    out.push(tarHeader(name, data.length, Date.now()), data, Buffer.alloc((512 - (data.length % 512)) % 512));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  out.push(Buffer.alloc(1024));
  return Buffer.concat(out);
}
