// An OAuth refresh whose new tokens cannot be saved (the credentials file's place taken, a full or read-only disk):
// the client is told the provider's tokens could not be saved, with the reason's code, and never the server's file
// paths (Node's file-system errors quote them: "EISDIR: illegal operation on a directory, rename '/srv/...'"). The
// operator's log keeps the whole error, path included.
import t from 'tap';
import { mkdirSync, rmSync } from 'node:fs';
import { gateway, provider, seed, tokenServer, upstream } from './oauth-harness.js';

t.test('a refreshed token that cannot be saved: the answer names the problem, not the path; the log keeps it', async (t) => {
  const tok = await tokenServer(t);
  const up = await upstream(t);
  const gw = await gateway(t, { acme: provider(up.url, tok.url) });
  await seed(gw.store, 'acme');
  t.equal((await gw.ask()).status, 200, 'the stored token serves');

  // the file's place is taken by a directory: the save's rename fails (as root too, unlike a read-only directory)
  const file = gw.store.pathFor('acme');
  rmSync(file);
  mkdirSync(`${file}/in-the-way`, { recursive: true });
  t.teardown(() => rmSync(file, { recursive: true, force: true }));
  up.st.next401 = 1; // the upstream refuses the token: the next request refreshes it and saves the new one
  t.equal((await gw.ask()).status, 401, 'the refusal is relayed');
  const before = gw.logs.length;
  const r = await gw.ask();
  t.equal(tok.st.n, 1, 'the token was refreshed');
  const error = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
  t.match(error, { code: 'TOLLGATE_ERR_PROVIDER_AUTH', message: /provider 'acme': refreshed tokens could not be saved .*\(E[A-Z]+\)/ }, `the answer (${r.status}) says what failed`);
  t.notMatch(error.message, gw.dataDir, 'and no file path of the server');
  t.notMatch(error.message, /\.json\.enc|credentials\//, 'not even the file\'s name');
  t.match(await gw.rows(), [{}, {}, { status: 'failure', error_type: 'TOLLGATE_ERR_PROVIDER_AUTH' }], 'the row: the code (rows and spans carry no message)');
  t.ok(gw.logs.slice(before).some((l) => l.includes('could not be saved') && l.includes(file)), 'the log keeps the path for the operator');
});

t.test('stored credentials that cannot be read or decrypted: the answer names the file under storage.data_dir, not its path', async (t) => {
  const tok = await tokenServer(t);
  const up = await upstream(t);
  const gw = await gateway(t, { acme: provider(up.url, tok.url) });
  const file = gw.store.pathFor('acme');
  const { writeFileSync } = await import('node:fs');
  const messages: string[] = [];
  for (const [what, write] of [
    ['not a credentials file', async () => { await gw.store.init(); writeFileSync(file, 'garbage'); }],
    ['a key file that holds no key', async () => { await seed(gw.store, 'acme'); writeFileSync(`${gw.dataDir}/secret.key`, 'short\n'); }],
  ] as const) {
    await write();
    const r = await gw.ask();
    const message = (JSON.parse(r.body) as { error: { message: string } }).error.message;
    t.equal(r.status, 502, what);
    t.notMatch(message, gw.dataDir, `${what}: no file path of the server`);
    messages.push(message);
  }
  t.match(messages, [/in storage\.data_dir\/credentials\/acme\.json\.enc are not a credentials file/, /storage\.data_dir\/secret\.key does not hold a 32-byte base64 key/], 'the files named as the config does');
});
