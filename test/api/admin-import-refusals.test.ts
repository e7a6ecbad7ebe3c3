// POST /api/admin/import's refusals (src/store/archive.ts) say what is wrong with the archive in its own terms: never
// a path of the gateway's work directory, a system error's text or the store engine's message (those are kept in the
// error's `detail`, which the route logs at info). Before, a missing manifest was "ENOENT ... open
// '<data_dir>/archive-work/import-.../manifest.json'", a table file the engine could not read was ClickHouse's
// "Cannot read all data ... (in file/uri <data_dir>/...)", and a string format_version "1" was "format_version 1 is
// not supported (this gateway reads 1)". An archive whose manifest lists no table was imported as nothing (200); it
// is a 400 now. Open mode (no keys): the routes need no token. Real socket, the real embedded store.

import t from 'tap';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { ArchiveError, importUnpacked, unpack } from '../../src/store/archive.js';
import { tarHeader } from '../../src/store/tar.js';
import { DEMO_PROVIDER, startApp } from '../helpers/app.js';
import { tempDir } from '../helpers/tmp.js';

const dataDir = tempDir(t);
const gw = await startApp(t, { providers: { demo: DEMO_PROVIDER } }, { dataDir });

/** A POSIX tar of `entries` (name, bytes), in order. */
function tar(entries: readonly (readonly [string, Buffer | string])[]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, data] of entries) {
    const bytes = Buffer.from(data);
    parts.push(tarHeader(name, bytes.length, Date.now()), bytes, Buffer.alloc((512 - (bytes.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

const manifest = (over: Record<string, unknown> = {}): string => JSON.stringify({
  format: 'tollgate-export', format_version: 1, schema_version: 1,
  tables: { requests: { file: 'tables/requests.native', rows: 1, columns: [{ name: 'request_id', type: 'UUID' }] } },
  ...over,
});

async function importBody(body: Buffer): Promise<{ status: number; code: string; message: string; text: string }> {
  const res = await fetch(`${gw.url}/api/admin/import`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body });
  const text = await res.text();
  const error = (JSON.parse(text) as { error?: { code: string; message: string } }).error;
  return { status: res.status, code: error?.code ?? '', message: error?.message ?? '', text };
}

/** What no refusal may show: the work directory, a system error, the engine's or V8's words. */
const LEAKS = [dataDir, 'archive-work', 'ENOENT', 'EEXIST', 'no such file', 'Cannot read all data', 'file/uri', 'Unexpected token', 'incorrect header check', 'aborted', 'Code:'];

const WHOLE = gzipSync(tar([['manifest.json', manifest()], ['tables/requests.native', Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 251))]]));
const CUT = WHOLE.subarray(0, Math.floor(WHOLE.length / 2));

const CASES: [string, Buffer, RegExp][] = [
  ['a tar with no entry', gzipSync(Buffer.alloc(1024)), /^archive: the archive has no manifest\.json$/],
  ['only a config.yaml', gzipSync(tar([['config.yaml', 'x: 1\n']])), /^archive: the archive has no manifest\.json$/],
  ['not gzip', Buffer.from('hello'), /^archive: not a readable archive: it is not gzip-compressed, or it is damaged or cut short$/],
  ['the first bytes of a gzip', gzipSync(Buffer.alloc(5000, 1)).subarray(0, 30), /^archive: not a readable archive: tar: header checksum mismatch/],
  ['a cut archive', CUT, /^archive: not a readable archive: it is not gzip-compressed, or it is damaged or cut short$/],
  ['gzip of garbage', gzipSync('hello'), /^archive: not a readable archive: tar: /],
  ['manifest.json twice', gzipSync(tar([['manifest.json', manifest()], ['manifest.json', manifest()]])), /^archive: the archive holds the entry 'manifest\.json' twice$/],
  ['manifest not JSON', gzipSync(tar([['manifest.json', 'nope']])), /^archive: manifest\.json is not valid JSON$/],
  ['manifest a list', gzipSync(tar([['manifest.json', '[]']])), /^archive: manifest\.json: it is a list, not an object$/],
  ['format_version a string', gzipSync(tar([['manifest.json', manifest({ format_version: '1' })]])), /^archive: manifest\.json: format_version is a string, not a number \(this gateway reads 1\)$/],
  ['format_version missing', gzipSync(tar([['manifest.json', manifest({ format_version: undefined })]])), /format_version is missing, not a number/],
  ['format_version 2', gzipSync(tar([['manifest.json', manifest({ format_version: 2 })]])), /format_version 2 is not supported \(this gateway reads 1\)/],
  ['schema_version a string', gzipSync(tar([['manifest.json', manifest({ schema_version: '1' })]])), /schema_version is a string, not a number/],
  ['tables a string', gzipSync(tar([['manifest.json', manifest({ tables: 'x' })]])), /manifest\.json: tables is a string, not an object of table name to/],
  ['tables a list', gzipSync(tar([['manifest.json', manifest({ tables: [] })]])), /manifest\.json: tables is a list, not an object/],
  ['tables empty', gzipSync(tar([['manifest.json', manifest({ tables: {} })]])), /manifest\.json: tables is empty: the archive holds no table/],
  ['an undescribed file named like a prototype key', gzipSync(tar([['manifest.json', manifest()], ['tables/requests.native', 'x'], ['tables/constructor.native', 'x']])), /tables\/constructor\.native is not described/],
  ['a column the store lacks', gzipSync(tar([['manifest.json', manifest({ tables: { requests: { file: 'tables/requests.native', rows: 1, columns: [{ name: 'nope', type: 'String' }] } } })], ['tables/requests.native', 'x']])), /^archive: table requests has no column nope in this store/],
  // what the reader keeps in memory or parses on the event loop is bounded (a review of the admin surface: 64 MiB of
  // zeros after the end marker, a 67 KB upload, took 151 s; a 100 MB manifest of `[],` stalled the loop 32 s)
  ['data after the end marker', gzipSync(Buffer.concat([tar([['manifest.json', manifest()]]), Buffer.from('x')])), /^archive: not a readable archive: tar: the archive has data after its end marker$/],
  ['8 MiB of zeros after the end marker', gzipSync(Buffer.concat([tar([['manifest.json', manifest()]]), Buffer.alloc(8 * 1024 ** 2)])), /^archive: not a readable archive: tar: more than 1 MiB of padding after the end marker$/],
  ['a 5 MiB manifest', gzipSync(tar([['manifest.json', `[${'[],'.repeat((5 * 1024 ** 2) / 3)}[]]`]])), /^archive: manifest\.json is larger than 4 MiB: not an archive this gateway wrote$/],
  ['a table file the engine cannot read', gzipSync(tar([['manifest.json', manifest()], ['tables/requests.native', 'garbage garbage']])), /^archive: table requests cannot be loaded: its file tables\/requests\.native is not a valid ClickHouse Native export of the columns the manifest lists$/],
];

t.test('each refusal: 400 in the error shape, saying why in the archive\'s terms, with no path or engine text', async (t) => {
  const before = await gw.rows();
  for (const [name, body, message] of CASES) {
    const r = await importBody(body);
    t.equal(r.status, 400, `${name}: 400`);
    t.equal(r.code, 'TOLLGATE_ERR_INVALID_REQUEST', `${name}: code`);
    t.match(r.message, message, `${name}: ${r.message}`);
    for (const leak of LEAKS) t.notOk(r.text.includes(leak), `${name}: does not show ${JSON.stringify(leak)}`);
  }
  t.same(await gw.rows(), before, 'nothing was imported');
});

t.test('what the gateway saw is kept in the error\'s detail (for the log), not in its message', async (t) => {
  const notGzip = await unpack(Readable.from([Buffer.from('hello')]), tempDir(t), 1_000_000).catch((err: unknown) => err);
  t.ok(notGzip instanceof ArchiveError);
  t.match((notGzip as ArchiveError).detail, /incorrect header check/);
  const dir = tempDir(t);
  const unpacked = await unpack(Readable.from([gzipSync(tar([['manifest.json', manifest()], ['tables/requests.native', 'garbage garbage']]))]), dir, 1_000_000);
  const engine = await importUnpacked(gw.app.tollgate.store, unpacked).catch((err: unknown) => err);
  t.ok(engine instanceof ArchiveError);
  t.ok(((engine as ArchiveError).detail ?? '').length > 0, `detail: ${(engine as ArchiveError).detail}`);
  t.notOk((engine as ArchiveError).message.includes(dir), 'the message has no path');
});

t.test('a tar writer\'s zero padding after the end marker (a whole 10 KiB record) is read as the end', async (t) => {
  const { readTar } = await import('../../src/store/tar.js');
  const dir = tempDir(t);
  const body = Buffer.concat([tar([['manifest.json', manifest()]]), Buffer.alloc(10240 - 1024 - 1024)]);
  const { join } = await import('node:path');
  // in pieces, as a socket gives it: the end marker and the padding split across chunks
  const chunks = (async function* () { for (let i = 0; i < body.length; i += 700) yield body.subarray(i, i + 700); })();
  t.same(await readTar(chunks, (name) => join(dir, name)), ['manifest.json']);
});
