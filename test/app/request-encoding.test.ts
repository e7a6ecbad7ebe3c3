// Two request-level refusals a review of limits found answered wrongly: a compressed request body (`content-encoding:
// gzip`, `br`) was parsed as it came and refused as "not valid JSON", where the JSON was fine and the encoding was
// what the gateway does not take (now 415 naming the encoding); and `Expect: 100-continue` with a declared body over
// `body_limit_bytes` got Node's automatic `100 Continue`, telling the client to upload what was then refused 413
// (now the 413 at once). Real sockets.

import t from 'tap';
import { connect } from 'node:net';
import { once } from 'node:events';
import { gzipSync } from 'node:zlib';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';

const gw = await startApp(t, { server: { body_limit_bytes: 65536 }, providers: { demo: DEMO_PROVIDER } });
const body = JSON.stringify({ model: 'demo/echo-1', messages: [{ role: 'user', content: 'hi' }] });

t.test('a compressed request body: 415 naming its encoding, recorded as such; identity is fine', async (t) => {
  for (const encoding of ['gzip', 'br']) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body: gzipSync(body) });
    t.equal(res.status, 415, encoding);
    t.match(await res.json(), { error: { code: 'TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE', message: new RegExp(`content-encoding '${encoding}' is not accepted`) } });
  }
  const plain = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, body });
  t.equal(plain.status, 200, 'identity is no encoding');
  const rows = await gw.rows("error_type = 'TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE'");
  t.same(rows.map((r) => Number(r.http_status)), [415, 415], 'each refusal has its row');
});

async function rawHead(headers: string): Promise<string> {
  const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
  t.teardown(() => socket.destroy());
  await once(socket, 'connect');
  socket.write(headers);
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('utf8')));
  await Promise.race([once(socket, 'close'), new Promise((r) => setTimeout(r, 3000))]);
  return text;
}

t.test('Expect: 100-continue over the body limit: the 413 at once, no 100 Continue', async (t) => {
  const over = await rawHead('POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\nexpect: 100-continue\r\n\r\n');
  t.match(over, /^HTTP\/1\.1 413 /, `answered 413 first (${over.split('\r\n')[0]})`);
  t.notMatch(over, /100 Continue/);
  t.match(over, /"code":"TOLLGATE_ERR_BODY_TOO_LARGE"/, 'in the error shape');
  const within = await rawHead(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n`);
  t.match(within, /^HTTP\/1\.1 100 Continue/, 'within the limit: continue, as before');
  // an archive import streams its body under a limit of its own: a large one with Expect continues (curl sends Expect)
  const archive = await rawHead('POST /api/admin/import HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/gzip\r\ncontent-length: 10000000\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n');
  t.match(archive, /^HTTP\/1\.1 100 Continue/, `an import over body_limit_bytes: continue (${archive.split('\r\n')[0]})`);
});
