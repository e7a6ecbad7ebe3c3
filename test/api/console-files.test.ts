// The console's files (src/api/console.ts): what a browser is sent for each built file and for the page, the
// conditional and range requests a browser makes, and that nothing but the files the build wrote is served, however
// the path is written. Over real sockets with raw paths (node:http sends them as written).

import t from 'tap';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { startApp, DEMO_PROVIDER } from '../helpers/app.js';
import { errorCode, send } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/tmp.js';
import { CONSOLE_CSP, CONSOLE_DIR, consoleRoutes } from '../../src/api/console.js';

const KEY = 'k-admin-console-0123456789';
const gw = await startApp(t, { server: { api_keys: [{ name: 'admin', key: KEY, role: 'admin' }] }, providers: { demo: DEMO_PROVIDER } });
const keyed = { authorization: `Bearer ${KEY}` };

const SECURE = {
  'content-security-policy': CONSOLE_CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY',
};

t.test('each built file: its bytes, its type, revalidated on every load, the security headers', async (t) => {
  const types: Record<string, RegExp> = {
    'app.js': /^(text|application)\/javascript/, 'app.css': /^text\/css/, 'favicon.svg': /^image\/svg\+xml/, 'index.html': /^text\/html/,
  };
  for (const [name, type] of Object.entries(types)) {
    const r = await send(gw.url, 'GET', `/console/${name}`);
    t.equal(r.status, 200, name);
    t.equal(r.body, readFileSync(join(CONSOLE_DIR, name), 'utf8'), `${name}: the built file's bytes`);
    t.match(r.headers['content-type'], type, `${name}: content type`);
    // Their names stay the same from one build to the next: cached for an hour, an upgrade's console (a fix to it
    // included) reached an open browser only an hour later.
    t.equal(r.headers['cache-control'], 'no-cache', `${name}: revalidated on every load`);
    t.match(r.headers.etag, /^W\/".+"$/, `${name}: an ETag`);
    const again = await send(gw.url, 'GET', `/console/${name}`, { headers: { 'if-none-match': String(r.headers.etag) } });
    t.equal(again.status, 304, `${name}: unchanged, a 304`);
    t.ok(r.headers['last-modified'], `${name}: Last-Modified`);
    t.match(r.headers, SECURE, `${name}: the security headers`);
  }
});

t.test('the page at / for a browser: index.html, revalidated every time', async (t) => {
  const r = await send(gw.url, 'GET', '/', { headers: { accept: 'text/html' } });
  t.equal(r.status, 200);
  t.equal(r.body, readFileSync(join(CONSOLE_DIR, 'index.html'), 'utf8'));
  t.match(r.headers['content-type'], /^text\/html/);
  t.equal(r.headers['cache-control'], 'no-cache', 'the page is revalidated (its files keep their names between builds)');
  t.match(r.headers, SECURE);
  const again = await send(gw.url, 'GET', '/', { headers: { accept: 'text/html', 'if-none-match': String(r.headers.etag) } });
  t.equal(again.status, 304, 'unchanged: 304');
  t.equal(again.body, '');
  t.same(Object.keys(JSON.parse((await send(gw.url, 'GET', '/')).body) as object), ['name', 'version'], 'not a browser: name and version');
});

t.test('conditional, range and HEAD requests', async (t) => {
  const full = await send(gw.url, 'GET', '/console/app.js');
  const etag = String(full.headers.etag);
  const cached = await send(gw.url, 'GET', '/console/app.js', { headers: { 'if-none-match': etag } });
  t.equal(cached.status, 304, 'If-None-Match with the ETag: 304');
  t.equal(cached.body, '');
  t.match(cached.headers, { 'content-security-policy': CONSOLE_CSP }, 'the 304 carries the security headers too');
  const since = await send(gw.url, 'GET', '/console/app.js', { headers: { 'if-modified-since': String(full.headers['last-modified']) } });
  t.equal(since.status, 304, 'If-Modified-Since: 304');
  const part = await send(gw.url, 'GET', '/console/app.js', { headers: { range: 'bytes=0-9' } });
  t.equal(part.status, 206, 'a range: 206');
  t.equal(part.body, full.body.slice(0, 10));
  t.equal(part.headers['content-range'], `bytes 0-9/${Buffer.byteLength(full.body)}`);
  const head = await send(gw.url, 'HEAD', '/console/app.css');
  t.equal(head.status, 200, 'HEAD: 200');
  t.equal(head.body, '', 'HEAD: no body');
  t.equal(Number(head.headers['content-length']), readFileSync(join(CONSOLE_DIR, 'app.css')).length, 'HEAD: the length of the file');
  const beyond = await send(gw.url, 'GET', '/console/app.js', { headers: { range: `bytes=${Buffer.byteLength(full.body) + 10}-` } });
  t.equal(beyond.status, 416, 'a range past the end: 416');
  t.equal(errorCode(beyond), 'TOLLGATE_ERR_RANGE_NOT_SATISFIABLE', 'in the documented error shape');
  t.equal(beyond.headers['content-range'], `bytes */${Buffer.byteLength(full.body)}`, 'with the length of the file');
  const stale = await send(gw.url, 'GET', '/console/app.js', { headers: { 'if-match': '"not-the-etag"' } });
  t.equal(stale.status, 412, 'If-Match another ETag: 412');
  t.equal(errorCode(stale), 'TOLLGATE_ERR_PRECONDITION_FAILED');
});

t.test('nothing but the built files, however the path is written: 404 in the error shape', async (t) => {
  const paths = [
    '/console/', '/console/nope.js', '/console/../config.yaml', '/console/..%2fpackage.json', '/console/%2e%2e/package.json',
    '/console/%2e%2e%2fpackage.json', '/console/app.js/', '/console/APP.JS', '/console/app.js%00', '/console/./app.js', '/console//app.js',
    '/console/app.js.', '/console/..%5cpackage.json', '/console/%252e%252e/package.json', '/console/index.html/..', '/console/.env', '/console/app.js%2f..%2f..%2fpackage.json',
  ];
  for (const path of paths) {
    const r = await send(gw.url, 'GET', path, { headers: keyed });
    t.equal(r.status, 404, `${path}: 404`);
    t.equal(errorCode(r), 'TOLLGATE_ERR_NOT_FOUND', `${path}: in the error shape`);
  }
});

t.test('a console directory with dotfiles, a subdirectory and a link out: only its plain top-level files', async (t) => {
  const dir = tempDir(t, 'tollgate-console-');
  const root = join(dir, 'console');
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'index.html'), '<!doctype html><p>page</p>');
  writeFileSync(join(root, 'app.js'), 'export {};');
  writeFileSync(join(root, '.secret'), 'SECRET-BYTES');
  writeFileSync(join(root, 'sub', 'inner.js'), 'INNER-BYTES');
  writeFileSync(join(dir, 'outside.txt'), 'OUTSIDE-BYTES');
  symlinkSync(join(dir, 'outside.txt'), join(root, 'link.txt'));
  const app = Fastify();
  t.teardown(() => app.close());
  await app.register(consoleRoutes, { version: '0', keysRequired: () => false, dir: root });
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });
  t.equal((await get('/console/app.js')).body, 'export {};');
  t.equal((await get('/', { accept: 'text/html' })).body, '<!doctype html><p>page</p>');
  for (const url of ['/console/.secret', '/console/sub/inner.js', '/console/sub', '/console/link.txt', '/console/../outside.txt']) {
    const r = await get(url);
    t.equal(r.statusCode, 404, `${url}: 404`);
    t.notMatch(r.body, /-BYTES/, `${url}: nothing of it`);
  }
});

t.test('a console that is not built: the page says so, the files are 404', async (t) => {
  const app = Fastify();
  t.teardown(() => app.close());
  await app.register(consoleRoutes, { version: '0', keysRequired: () => false, dir: join(tempDir(t, 'tollgate-console-'), 'missing') });
  const page = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } });
  t.equal(page.statusCode, 503);
  t.match(page.body, /the console is not built/);
  t.equal((await app.inject({ method: 'GET', url: '/console/app.js' })).statusCode, 404);
});
