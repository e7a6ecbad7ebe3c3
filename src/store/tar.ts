// A POSIX tar (ustar) writer and reader for the export archive: regular files only, streamed in both directions.
// Each entry is a 512-byte header (name, octal size, checksum) followed by its bytes padded to 512; two zero blocks
// end the archive. Sizes past the 11 octal digits of ustar (8 GiB) use GNU's base-256 form, which tar reads too.
// (The `tar` package in node_modules is a dev-only dependency of the test runner, so it is not used here.)

import { createWriteStream, openSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';

const BLOCK = 512;
const MAX_OCTAL_SIZE = 0o77777777777;

export interface TarEntry {
  /** Path inside the archive (at most 100 bytes here: the archive's names are short). */
  readonly name: string;
  readonly size: number;
  /** The entry's bytes; exactly `size` of them. */
  readonly body: () => AsyncIterable<Uint8Array>;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

export function tarHeader(name: string, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 100) throw new Error(`tar entry name longer than 100 bytes: ${name}`);
  nameBytes.copy(h, 0);
  h.write(octal(0o644, 8), 100, 'ascii'); // mode
  h.write(octal(0, 8), 108, 'ascii'); // uid
  h.write(octal(0, 8), 116, 'ascii'); // gid
  if (size <= MAX_OCTAL_SIZE) h.write(octal(size, 12), 124, 'ascii');
  else {
    h[124] = 0x80; // base-256: the high bit of the first byte, the value big-endian in the rest
    h.writeBigUInt64BE(BigInt(size), 124 + 4);
  }
  h.write(octal(Math.floor(mtime / 1000), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii'); // checksum field counts as spaces while summing
  h.write('0', 156, 'ascii'); // typeflag: regular file
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

/** The archive's bytes: each entry's header, body and padding, then the end-of-archive blocks. */
export async function* writeTar(entries: Iterable<TarEntry>, mtime = Date.now()): AsyncGenerator<Uint8Array> {
  for (const e of entries) {
    yield tarHeader(e.name, e.size, mtime);
    let seen = 0;
    for await (const chunk of e.body()) {
      seen += chunk.length;
      if (seen > e.size) throw new Error(`tar entry ${e.name} is longer than its ${e.size} bytes`);
      yield chunk;
    }
    if (seen !== e.size) throw new Error(`tar entry ${e.name} has ${seen} bytes, not ${e.size}`);
    const pad = (BLOCK - (e.size % BLOCK)) % BLOCK;
    if (pad > 0) yield Buffer.alloc(pad);
  }
  yield Buffer.alloc(2 * BLOCK);
}

/** Zero padding a tar writer may add after the end marker (its records: GNU tar's 10 KiB, or `-b` up to this). */
const MAX_TRAILING = 1024 ** 2;

const isZero = (b: Uint8Array): boolean => b.every((x) => x === 0);

function parseSize(field: Buffer): number {
  if ((field[0]! & 0x80) !== 0) {
    let v = 0n;
    for (let i = 1; i < field.length; i++) v = (v << 8n) | BigInt(field[i]!);
    return Number(v);
  }
  const text = field.toString('ascii').replace(/\0.*$/s, '').trim();
  if (!/^[0-7]*$/.test(text)) throw new Error(`tar: bad size field '${text}'`);
  return text === '' ? 0 : parseInt(text, 8);
}

function parseHeader(h: Buffer): { name: string; size: number; type: string } {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
  const stored = parseInt(h.subarray(148, 156).toString('ascii').replace(/\0.*$/s, '').trim(), 8);
  if (stored !== sum) throw new Error('tar: header checksum mismatch (not a tar archive, or a damaged one)');
  const field = (start: number, len: number) => h.subarray(start, start + len).toString('utf8').replace(/\0.*$/s, '');
  const prefix = h.subarray(257, 262).toString('ascii') === 'ustar' ? field(345, 155) : '';
  const name = prefix === '' ? field(0, 100) : `${prefix}/${field(0, 100)}`;
  return { name, size: parseSize(h.subarray(124, 136)), type: String.fromCharCode(h[156]!) };
}

/**
 * Read a tar stream, writing each regular file to the path `target(name, size)` returns (null: refuse the archive
 * with that name). Returns the names read, in order.
 */
export async function readTar(source: AsyncIterable<Uint8Array>, target: (name: string, size: number) => string): Promise<string[]> {
  const names: string[] = [];
  let pending = Buffer.alloc(0);
  let out: WriteStream | null = null;
  let left = 0; // body bytes of the current entry still to come
  let skip = 0; // padding bytes still to come
  let ended = false;
  let trailing = 0; // bytes after the end marker
  let failed: Error | null = null;
  const finish = async () => {
    if (out === null) return;
    const s = out;
    out = null;
    s.end();
    await once(s, 'close');
    if (failed !== null) throw failed;
  };
  try {
    for await (const chunk of source) {
      if (ended) {
        // Past the end marker only a writer's padding may follow: checked as it streams, never kept.
        trailing += chunk.length;
        if (!isZero(chunk)) throw new Error('tar: the archive has data after its end marker');
        if (trailing > MAX_TRAILING) throw new Error(`tar: more than ${MAX_TRAILING / 1024 ** 2} MiB of padding after the end marker`);
        continue;
      }
      pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
      while (pending.length > 0 && !ended) {
        if (left > 0) {
          const part = pending.subarray(0, Math.min(left, pending.length));
          pending = pending.subarray(part.length);
          left -= part.length;
          if (!out!.write(part)) await once(out!, 'drain');
          if (left === 0) await finish();
        } else if (skip > 0) {
          const n = Math.min(skip, pending.length);
          pending = pending.subarray(n);
          skip -= n;
        } else {
          if (pending.length < BLOCK) break;
          const h = pending.subarray(0, BLOCK);
          pending = pending.subarray(BLOCK);
          if (isZero(h)) {
            ended = true;
            trailing = pending.length;
            if (!isZero(pending)) throw new Error('tar: the archive has data after its end marker');
            pending = Buffer.alloc(0);
            break;
          }
          const { name, size, type } = parseHeader(h);
          if (type !== '0' && type !== '\0') throw new Error(`tar: entry ${name} is not a regular file`);
          names.push(name);
          // opened here, synchronously: an existing file or a bad path is an error now, not an event later
          out = createWriteStream('', { fd: openSync(target(name, size), 'wx') });
          out.on('error', (err) => (failed = err));
          left = size;
          skip = (BLOCK - (size % BLOCK)) % BLOCK;
          if (size === 0) await finish();
        }
      }
    }
  } finally {
    if (out !== null) (out as WriteStream).destroy();
  }
  if (left > 0 || out !== null) throw new Error('tar: the archive ends inside an entry');
  if (!ended) throw new Error('tar: the archive has no end marker (truncated)');
  return names;
}
