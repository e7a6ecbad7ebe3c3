// CredentialStore: OAuth tokens encrypted at rest under <data_dir>/credentials/<id>.json.enc, with the key from
// TOLLGATE_SECRET_KEY or a generated <data_dir>/secret.key. What is on disk never holds a token in clear; files are
// 0600 and the directory 0700; a wrong key, a tampered or a moved file is a TOLLGATE_ERR_PROVIDER_AUTH that says to
// connect again and never quotes the token.

import t, { type Test } from 'tap';
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CredentialStore, type OAuthTokens } from '../../src/providers/credentials.js';
import { TollgateError } from '../../src/core/errors.js';
import { tempDir } from '../helpers/tmp.js';

const TOKENS: OAuthTokens = {
  access_token: 'at-SECRET-access-7f3a9c',
  refresh_token: 'rt-SECRET-refresh-1b2c3d',
  token_type: 'Bearer',
  expires_at: 1_900_000_000_000,
  scope: 'chat',
  obtained_at: 1_899_999_000_000,
};

const mode = (path: string) => statSync(path).mode & 0o777;

/** The error `p` rejects with, which must be a TollgateError. */
async function authError(t: Test, p: Promise<unknown>): Promise<TollgateError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, TollgateError);
  const e = err as TollgateError;
  t.equal(e.code, 'TOLLGATE_ERR_PROVIDER_AUTH');
  t.notMatch(e.message, /SECRET-/, 'the message never holds a token');
  return e;
}

t.test('round trip with a generated key file', async (t) => {
  const dir = tempDir(t);
  const store = new CredentialStore(dir, {});
  t.equal(await store.load('acme'), null, 'nothing stored yet');
  t.notOk(existsSync(join(dir, 'secret.key')), 'loading creates no key');

  await store.save('acme', TOKENS);
  t.same(await store.load('acme'), TOKENS);
  t.same(await new CredentialStore(dir, {}).load('acme'), TOKENS, 'a new store (another process) reads it too');

  const file = join(dir, 'credentials', 'acme.json.enc');
  const raw = readFileSync(file);
  for (const secret of [TOKENS.access_token, TOKENS.refresh_token!, 'SECRET-']) {
    t.equal(raw.indexOf(secret), -1, `"${secret}" is not on disk in clear`);
  }
  const envelope = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  t.same(Object.keys(envelope).sort(), ['ciphertext', 'iv', 'key', 'tag', 'version']);
  t.match(envelope, { version: 1, key: 'file' });
  t.equal(Buffer.from(envelope.iv as string, 'base64').length, 12, '12-byte IV');
  t.equal(Buffer.from(envelope.tag as string, 'base64').length, 16, '16-byte tag');

  t.equal(mode(file), 0o600, 'the credentials file is 0600');
  t.equal(mode(join(dir, 'credentials')), 0o700, 'the directory is 0700');
  t.equal(mode(join(dir, 'secret.key')), 0o600, 'the key file is 0600');
  t.equal(Buffer.from(readFileSync(join(dir, 'secret.key'), 'utf8').trim(), 'base64').length, 32, '32 random bytes');

  const second = { ...TOKENS, access_token: 'at-SECRET-second' };
  await store.save('acme', second);
  t.same(await store.load('acme'), second, 'a save replaces');
  t.not(JSON.parse(readFileSync(file, 'utf8')).iv, envelope.iv, 'with a fresh IV');
  t.same(readdirSync(join(dir, 'credentials')), ['acme.json.enc'], 'no temp files are left behind');
  t.same(readdirSync(dir).sort(), ['credentials', 'secret.key']);
});

t.test('TOLLGATE_SECRET_KEY: no key file; a different key is refused', async (t) => {
  const dir = tempDir(t);
  const store = new CredentialStore(dir, { TOLLGATE_SECRET_KEY: 'correct horse battery staple' });
  await store.save('acme', TOKENS);
  t.notOk(existsSync(join(dir, 'secret.key')), 'no key file is made');
  t.same(await store.load('acme'), TOKENS);
  const raw = readFileSync(join(dir, 'credentials', 'acme.json.enc'), 'utf8');
  t.notMatch(raw, /SECRET-/);
  t.match(JSON.parse(raw), { version: 1, key: 'env', salt: String });
  t.equal(mode(join(dir, 'credentials', 'acme.json.enc')), 0o600);

  const wrong = await authError(t, new CredentialStore(dir, { TOLLGATE_SECRET_KEY: 'wrong horse' }).load('acme'));
  t.match(wrong.message, /provider 'acme' cannot be decrypted \(a different TOLLGATE_SECRET_KEY, or the file was modified\)/);
  t.match(wrong.message, 'run `tollgate connect acme` again');

  const unset = await authError(t, new CredentialStore(dir, {}).load('acme'));
  t.match(unset.message, /encrypted with TOLLGATE_SECRET_KEY, which is not set/);
  const empty = await authError(t, new CredentialStore(dir, { TOLLGATE_SECRET_KEY: '' }).load('acme'));
  t.match(empty.message, /which is not set/, 'an empty TOLLGATE_SECRET_KEY counts as unset');
});

t.test('a file written with the key file is refused once TOLLGATE_SECRET_KEY is set, and the reverse', async (t) => {
  const dir = tempDir(t);
  await new CredentialStore(dir, {}).save('acme', TOKENS);
  const e = await authError(t, new CredentialStore(dir, { TOLLGATE_SECRET_KEY: 'k' }).load('acme'));
  t.match(e.message, /were encrypted with .*secret\.key, but TOLLGATE_SECRET_KEY is set/);

  await new CredentialStore(dir, {}).save('other', TOKENS);
  renameSync(join(dir, 'secret.key'), join(dir, 'secret.key.bak'));
  const gone = await authError(t, new CredentialStore(dir, {}).load('other'));
  t.match(gone.message, /cannot be decrypted: .*secret\.key is missing/);
  t.notOk(existsSync(join(dir, 'secret.key')), 'and loading does not make a new one');

  await new CredentialStore(dir, {}).save('third', TOKENS);
  const replaced = await authError(t, new CredentialStore(dir, {}).load('other'));
  t.match(replaced.message, /cannot be decrypted \(a different .*secret\.key, or the file was modified\)/, 'a new key file does not open old files');
});

t.test('a tampered, truncated, moved or garbled file is an error, not a crash', async (t) => {
  const dir = tempDir(t);
  const store = new CredentialStore(dir, {});
  await store.save('acme', TOKENS);
  const file = join(dir, 'credentials', 'acme.json.enc');
  const good = readFileSync(file, 'utf8');
  const envelope = JSON.parse(good) as Record<string, string>;

  const flip = (b64: string) => {
    const b = Buffer.from(b64, 'base64');
    b[0]! ^= 0x01;
    return b.toString('base64');
  };
  const cases: [string, string][] = [
    ['a flipped ciphertext bit', JSON.stringify({ ...envelope, ciphertext: flip(envelope.ciphertext!) })],
    ['a flipped tag bit', JSON.stringify({ ...envelope, tag: flip(envelope.tag!) })],
    ['a flipped iv bit', JSON.stringify({ ...envelope, iv: flip(envelope.iv!) })],
    ['a truncated tag', JSON.stringify({ ...envelope, tag: Buffer.from(envelope.tag!, 'base64').subarray(0, 4).toString('base64') })],
  ];
  for (const [what, text] of cases) {
    writeFileSync(file, text);
    const e = await authError(t, store.load('acme'));
    t.match(e.message, /cannot be decrypted .*run `tollgate connect acme` again/, what);
  }
  for (const [what, text] of [
    ['not JSON', '{"version":1,"key":"file","iv":'],
    ['an unknown version', JSON.stringify({ ...envelope, version: 2 })],
    ['empty', ''],
  ]) {
    writeFileSync(file, text!);
    const e = await authError(t, store.load('acme'));
    t.match(e.message, /are not a credentials file this version understands: run `tollgate connect acme` again/, what);
  }

  // the provider id is authenticated: acme's file under another provider's name does not decrypt
  writeFileSync(file, good);
  writeFileSync(join(dir, 'credentials', 'other.json.enc'), good);
  const moved = await authError(t, store.load('other'));
  t.match(moved.message, /provider 'other' cannot be decrypted/);
  t.same(await store.load('acme'), TOKENS, 'the original still loads');
});

t.test('provider ids cannot leave the credentials directory', async (t) => {
  const dir = tempDir(t);
  const store = new CredentialStore(join(dir, 'data'), {});
  for (const id of ['../acme', '..', '.', '', 'a/b', 'a\\b', '.hidden', '/etc/passwd', 'a\0b']) {
    const e = await authError(t, store.save(id, TOKENS));
    t.match(e.message, /invalid provider id/, JSON.stringify(id));
    await authError(t, store.load(id));
  }
  t.notOk(existsSync(join(dir, 'data')), 'nothing was written');
  t.equal(store.pathFor('a.b-c_d'), join(dir, 'data', 'credentials', 'a.b-c_d.json.enc'));
});

t.test('two stores creating the key at once agree on one key', async (t) => {
  const dir = tempDir(t);
  const stores = Array.from({ length: 8 }, () => new CredentialStore(dir, {}));
  await Promise.all(stores.map((s, i) => s.save(`p${i}`, { ...TOKENS, access_token: `at-${i}` })));
  const reader = new CredentialStore(dir, {});
  for (let i = 0; i < stores.length; i++) t.equal((await reader.load(`p${i}`))?.access_token, `at-${i}`);
  t.same(readdirSync(dir).sort(), ['credentials', 'secret.key'], 'one key file, no temp files');
});

t.test('a key file that is not 32 bytes of base64 is reported', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'secret.key'), 'short\n');
  const e = await authError(t, new CredentialStore(dir, {}).save('acme', TOKENS));
  t.match(e.message, /secret\.key does not hold a 32-byte base64 key; remove it/);
});

t.test('an existing key file others may read is made the owner\'s alone when it is read', async (t) => {
  const dir = tempDir(t);
  await new CredentialStore(dir, {}).save('acme', TOKENS);
  const { chmodSync } = await import('node:fs');
  const key = join(dir, 'secret.key');
  chmodSync(key, 0o644); // copied in, or restored from a backup, with a looser mode
  t.same(await new CredentialStore(dir, {}).load('acme'), TOKENS, 'still read');
  t.equal(mode(key), 0o600, 'and tightened to 0600');
});
