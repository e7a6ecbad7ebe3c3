// One process per spool directory. Two gateways on one spool each take the other's open segment for an earlier
// process's leftover: one replays and deletes it (recording the other's requests in flight as interrupted), the other
// inserts its fuller version later under the same deduplication token, which ClickHouse drops. So the app takes this
// lock before the spool opens its leftovers, and a second process on the directory is refused at start.
//
// The lock is a file (`tollgate.lock`) created with O_EXCL, holding its owner's pid, host, boot id and start time
// (/proc/<pid>/stat). A lock is stale, and taken over, when its owner is gone: on this host, when the pid no longer
// exists, or exists but started at another time (a pid reused, also a container's pid 1 after a restart), or the
// machine was booted since; from another host (a shared volume, a container recreated under another hostname), or
// unreadable, when its owner stopped refreshing its mtime (every REFRESH_MS) for STALE_MS. So a `kill -9` never keeps a
// gateway from starting. Takeovers are serialised by a second O_EXCL file, so two processes starting at once after a
// crash cannot both take the lock. Released (the file removed, when still the one created) on close.

import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = 'tollgate.lock';
/** How often the owner refreshes the lock's mtime. */
const REFRESH_MS = 10_000;
/** A lock that cannot be checked by pid (another host's, or unreadable) is stale once not refreshed for this long. */
export const STALE_MS = 60_000;
/** A takeover marker older than this was left by a process that died taking over. */
const TAKEOVER_MS = 10_000;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

interface Owner {
  readonly pid: number;
  readonly host: string;
  readonly boot: string | null;
  readonly start: string | null;
  readonly at: string;
}

/** The directory is another process's, or cannot be used at all: the app cannot start. main.ts prints the message. */
export class DirLockError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'DirLockError';
  }
}

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

/** Why a spool directory cannot be used (not writable, full, missing parent...), as one sentence an operator can act on. */
export function unusableDir(dir: string, err: unknown): DirLockError {
  if (err instanceof DirLockError) return err;
  const code = errno(err);
  const what = err instanceof Error ? err.message : String(err);
  const fix = code === 'EROFS' ? 'it is on a read-only file system: mount it read-write, or point storage.spool.dir at a writable disk'
    : code === 'EACCES' || code === 'EPERM' ? `the user running the gateway (uid ${process.getuid?.() ?? '?'}) may not write there: fix its owner or mode, or point storage.spool.dir elsewhere`
    : code === 'ENOSPC' || code === 'EDQUOT' ? 'its disk is full (space or inodes): free some, or point storage.spool.dir at another disk'
    : 'fix it, or point storage.spool.dir at a writable directory';
  return new DirLockError(`storage: cannot use the spool directory ${dir} (${what}): ${fix}. Usage rows are written there before the store, so the gateway does not start without it.`, { cause: err });
}

const bootId = (): string | null => read('/proc/sys/kernel/random/boot_id')?.trim() ?? null;
/** The start time of `pid` (clock ticks since boot, /proc/<pid>/stat field 22), or null where there is no /proc. */
function startOf(pid: number): string | null {
  const stat = read(`/proc/${pid}/stat`);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
}
function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM'; // it exists, as another user's
  }
}

/** Is the lock found (its text and mtime) still held by a live owner? */
function held(owner: Owner | null, mtimeMs: number): boolean {
  if (owner === null || owner.host !== hostname()) return Date.now() - mtimeMs < STALE_MS;
  const boot = bootId();
  if (owner.boot !== null && boot !== null && owner.boot !== boot) return false;
  if (!pidExists(owner.pid)) return false;
  const start = owner.start === null ? null : startOf(owner.pid);
  return start === null || start === owner.start;
}

function parse(text: string): Owner | null {
  try {
    const o = JSON.parse(text) as Owner;
    return Number.isInteger(o.pid) && o.pid > 0 && typeof o.host === 'string' ? o : null;
  } catch {
    return null;
  }
}

export class DirLock {
  readonly path: string;
  /** The stale lock this one replaced (its owner had died), for the caller to log; null when there was none. */
  readonly replaced: Readonly<Owner> | { readonly unreadable: true } | null;
  readonly #ino: number;
  readonly #text: string;
  readonly #timer: NodeJS.Timeout;
  #released = false;

  constructor(path: string, ino: number, text: string, replaced: DirLock['replaced']) {
    this.path = path;
    this.#ino = ino;
    this.#text = text;
    this.replaced = replaced;
    this.#timer = setInterval(() => {
      const now = new Date();
      try {
        utimesSync(path, now, now);
      } catch {} // a read-only or full disk: the lock stays; only another host's judgement of it ages
    }, REFRESH_MS);
    this.#timer.unref();
  }

  /** Remove the lock file, when it is still the one this lock created (its inode and its text). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#timer);
    try {
      if (statSync(this.path).ino === this.#ino && readFileSync(this.path, 'utf8') === this.#text) unlinkSync(this.path);
    } catch {} // gone already, or the disk refuses: the next start finds it stale
  }
}

/** Take `dir` (created when missing) for this process; throws DirLockError when another live process holds it. */
export function lockDir(dir: string): DirLock {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw unusableDir(dir, err);
  }
  const path = join(dir, LOCK_FILE);
  const me: Owner = { pid: process.pid, host: hostname(), boot: bootId(), start: startOf(process.pid), at: new Date().toISOString() };
  let replaced: DirLock['replaced'] = null;
  for (let attempt = 0; attempt < 10; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw unusableDir(dir, err);
      const found = foundLock(path);
      if (found === null) continue; // released meanwhile
      if (held(found.owner, found.mtimeMs)) throw inUse(dir, path, found.owner);
      if (takeOver(path, found.text)) replaced = found.owner ?? { unreadable: true };
      else Atomics.wait(PAUSE, 0, 0, 20); // another process is taking it over this moment: look again shortly
      continue;
    }
    let text = `${JSON.stringify(me)}\n`;
    try {
      writeSync(fd, text);
    } catch {
      text = ''; // a disk that takes the file but not its bytes (full): the lock holds, as an unreadable one kept fresh
    }
    const { ino } = fstatSync(fd);
    closeSync(fd);
    return new DirLock(path, ino, text, replaced);
  }
  throw new DirLockError(`storage: could not take the lock of the spool directory ${dir} (${path}): other processes keep taking it`);
}

function foundLock(path: string): { text: string; owner: Owner | null; mtimeMs: number } | null {
  try {
    const { mtimeMs } = statSync(path);
    const text = readFileSync(path, 'utf8');
    return { text, owner: parse(text), mtimeMs };
  } catch (err) {
    if (errno(err) === 'ENOENT') return null;
    throw unusableDir(join(path, '..'), err);
  }
}

function inUse(dir: string, path: string, owner: Owner | null): DirLockError {
  const who = owner === null ? 'another process (its lock file is unreadable)' : `another Tollgate process (pid ${owner.pid} on host ${owner.host}, since ${owner.at})`;
  return new DirLockError(
    `storage: the spool directory ${dir} is in use by ${who}. Two gateways on one spool lose and duplicate usage rows: ` +
      `stop that process, or give this one its own storage.data_dir (or storage.spool.dir). ` +
      `If that process is gone, remove ${path}` + (owner === null || owner.host !== hostname() ? ` (or wait: it is taken over once not refreshed for ${STALE_MS / 1000} s).` : '.'),
  );
}

/**
 * Remove the stale lock whose text is `text`, under a takeover marker so that only one process starting now does it.
 * False, and nothing removed, when another process is taking it over at the same moment or took it since (the caller
 * looks again).
 */
function takeOver(path: string, text: string): boolean {
  const marker = `${path}.takeover`;
  try {
    closeSync(openSync(marker, 'wx'));
  } catch (err) {
    if (errno(err) !== 'EEXIST') throw unusableDir(join(path, '..'), err);
    try {
      if (Date.now() - statSync(marker).mtimeMs > TAKEOVER_MS) unlinkSync(marker); // its taker died
    } catch {}
    return false;
  }
  try {
    if (read(path) !== text) return false; // not the stale one any more: a lock taken meanwhile
    unlinkSync(path);
    return true;
  } catch (err) {
    if (errno(err) === 'ENOENT') return false;
    throw unusableDir(join(path, '..'), err);
  } finally {
    try {
      unlinkSync(marker);
    } catch {}
  }
}
