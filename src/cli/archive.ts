// `tollgate export` and `tollgate import`: clients of a running gateway. Each re-authenticates first
// (POST /api/admin/reauth with the admin key; in open mode, with none) and sends the short-lived token it gets to
// POST /api/admin/export or /api/admin/import. The archive streams to or from the file; nothing is held in memory.

import { createReadStream, createWriteStream, linkSync, renameSync, rmSync, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import type { ServerAddress } from '../config/load.js';

export interface GatewayTarget {
  /** Base URL of the gateway, e.g. http://127.0.0.1:4000. */
  readonly url: string;
  /** An admin key (none in open mode). */
  readonly key?: string;
}

type Out = { write(s: string): unknown };

/** The gateway's URL from its config's server.host and server.port, a wildcard host reached on loopback. */
export function gatewayUrl(server: ServerAddress): string {
  let host = server.host;
  if (host === '0.0.0.0') host = '127.0.0.1';
  else if (host === '::') host = '::1';
  if (host.includes(':')) host = `[${host}]`;
  return `http://${host}:${server.port}`;
}

const endpoint = (base: string, path: string): string => `${base.replace(/\/+$/, '')}${path}`;

/** The error message of a gateway answer in the documented error shape, or the status and the start of the body. */
async function failure(what: string, status: number, body: { text(): Promise<string> }): Promise<Error> {
  const text = await body.text().catch(() => '');
  let message = text.slice(0, 300);
  try {
    const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
    if (e?.message) message = `${e.code ?? ''}: ${e.message}`;
  } catch {
    /* not JSON: the raw start of the body */
  }
  return new Error(`${what} failed: HTTP ${status} ${message}`);
}

/** A re-authentication token for `target.key`. */
export async function reauthenticate(target: GatewayTarget): Promise<string> {
  const res = await request(endpoint(target.url, '/api/admin/reauth'), {
    method: 'POST',
    headers: target.key === undefined ? {} : { authorization: `Bearer ${target.key}` },
  });
  if (res.statusCode !== 200) {
    const err = await failure('re-authentication', res.statusCode, res.body);
    if (res.statusCode === 401 && target.key === undefined) err.message += ' (pass an admin key with --key or TOLLGATE_API_KEY)';
    throw err;
  }
  return ((await res.body.json()) as { token: string }).token;
}

/** Export the gateway's store to `out` (default: the file name the gateway suggests, in the working directory). */
export async function exportArchive(target: GatewayTarget, opts: { out?: string }, log: Out): Promise<string> {
  const token = await reauthenticate(target);
  const res = await request(endpoint(target.url, '/api/admin/export'), { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  if (res.statusCode !== 200) throw await failure('export', res.statusCode, res.body);
  // The gateway's suggested name is taken only in the form the gateway gives it, and never replaces a file: a wrong
  // or hostile --url could otherwise name config.yaml or .bashrc in the working directory.
  const suggested = /filename="(tollgate-export-[\w.:-]{1,64}\.tar\.gz)"/.exec(String(res.headers['content-disposition'] ?? ''))?.[1] ?? 'tollgate-export.tar.gz';
  const file = opts.out ?? suggested;
  // A device or a FIFO named by --out (/dev/stdout, a pipe into gpg) is written through: renamed over, it would be
  // replaced by an ordinary file (as root, /dev/null itself) and its reader would get nothing.
  const existing = statSync(file, { throwIfNoEntry: false });
  if (existing !== undefined && !existing.isFile()) {
    if (existing.isDirectory()) throw new Error(`--out ${file} is a directory: name a file in it`);
    let bytes = 0;
    res.body.on('data', (chunk: Buffer) => void (bytes += chunk.length));
    await pipeline(res.body, createWriteStream(file, { flags: 'w' }));
    log.write(`exported to ${file} (${bytes} bytes)\n`);
    return file;
  }
  // Written under a temporary name of this process's and renamed at the end: an interrupted export leaves no archive
  // that looks whole, and (removed on Ctrl-C, named apart otherwise) nothing that stops the next export. Readable by
  // its owner only: it holds the whole record and the config.
  const partial = `${file}.${process.pid}.partial`;
  const interrupted = (signal: NodeJS.Signals) => {
    rmSync(partial, { force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  try {
    await pipeline(res.body, createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
    if (opts.out !== undefined) renameSync(partial, file);
    else {
      linkSync(partial, file); // fails when the file exists: the suggested name never replaces one
      rmSync(partial, { force: true });
    }
  } catch (err) {
    rmSync(partial, { force: true });
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${file} exists already: name another with --out`);
    throw err;
  } finally {
    process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
  }
  log.write(`exported to ${file} (${statSync(file).size} bytes)\n`);
  return file;
}

export interface ImportAnswer {
  readonly imported: Record<string, number>;
  readonly skipped: Record<string, number>;
}

/** Import the archive `file` into the gateway's store; prints one line per table. */
export async function importArchive(target: GatewayTarget, file: string, log: Out): Promise<ImportAnswer> {
  const size = statSync(file).size;
  const token = await reauthenticate(target);
  const res = await request(endpoint(target.url, '/api/admin/import'), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip', 'content-length': String(size) },
    body: createReadStream(file),
  });
  if (res.statusCode !== 200) throw await failure('import', res.statusCode, res.body);
  const answer = (await res.body.json()) as ImportAnswer;
  for (const table of Object.keys(answer.imported)) {
    log.write(`${table}: ${answer.imported[table]} imported, ${answer.skipped[table] ?? 0} already present\n`);
  }
  return answer;
}
