// The export archive (docs/security.md): one gzip-compressed POSIX tar holding
//
//   manifest.json           format, versions, created_at, and per table: its file, row count and columns
//   config.yaml             the config file, secrets replaced by ${TOLLGATE_REDACTED_<PATH>} references
//   tables/<table>.native   every data table, ClickHouse Native format (src/store/export.ts)
//
// Export writes the table files to a work directory under storage.data_dir first (the manifest needs their row
// counts, a tar header their sizes), then streams the archive from them; import streams the upload into a work
// directory, checks the manifest, and hands the files to the store. Nothing holds a whole table in memory.
//
// A refusal (ArchiveError) says what is wrong with the archive in its own terms: never a path of the work directory,
// a system error's text or the store engine's message (those go in `detail`, which the route logs at info). A
// system error while unpacking (a full disk) is not the archive's fault and is thrown as it is (a 500).

import { createReadStream, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Store } from '../store/client.js';
import { dataTables, exportTable, schemaVersion, stageTable, type Column, type StagedTable } from '../store/export.js';
import { ruleBreaches } from './import-checks.js';
import { readTar, writeTar, type TarEntry } from './tar.js';

export const ARCHIVE_FORMAT = 'tollgate-export';
export const ARCHIVE_FORMAT_VERSION = 1;
const TABLE_ENTRY = /^tables\/([A-Za-z_][A-Za-z0-9_]*)\.native$/;

export const TOLLGATE_VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export interface ManifestTable {
  readonly file: string;
  readonly rows: number;
  readonly columns: readonly Column[];
}

export interface Manifest {
  readonly format: typeof ARCHIVE_FORMAT;
  readonly format_version: number;
  readonly tollgate_version: string;
  readonly schema_version: number;
  readonly database: string;
  readonly created_at: string;
  readonly config: { readonly source: 'file' | 'effective'; readonly redacted: readonly string[] };
  readonly tables: Readonly<Record<string, ManifestTable>>;
}

/** A refusal of the archive itself (not of the store): a 400 for the route. */
export class ArchiveError extends Error {
  /** What the gateway saw (a system or engine message, with paths): for the log, never for the client. */
  readonly detail: string | undefined;
  constructor(message: string, opts: { detail?: string } = {}) {
    super(message);
    this.name = 'ArchiveError';
    this.detail = opts.detail;
  }
}

/** A name taken from the archive, as a message shows it. */
const shown = (name: string): string => (name.length > 100 ? `${name.slice(0, 100)}…` : name);

/** What a JSON value is, for a message that names a wrong type. */
function kindOf(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** A Node system error (ENOSPC, EACCES, ...): the gateway's problem, not the archive's. */
const isSystemError = (err: unknown): boolean => typeof (err as NodeJS.ErrnoException)?.syscall === 'string';

/** The tar reader's own refusal (src/store/tar.ts): it names only what the archive holds. */
const isTarRefusal = (err: unknown): err is Error => err instanceof Error && !('code' in err) && err.message.startsWith('tar');

/** Why unpacking failed, in the archive's terms (the error's own text goes to `detail`). */
function unreadable(err: unknown): ArchiveError {
  if (isTarRefusal(err)) return new ArchiveError(`not a readable archive: ${shown(err.message)}`);
  const e = err as Error & { code?: unknown };
  const detail = String(e?.message ?? err);
  // zlib's errors (Z_DATA_ERROR, Z_BUF_ERROR, ...), and the abort of the stages after it when the input ends early.
  if (typeof e?.code === 'string' && (e.code.startsWith('Z_') || e.code === 'ABORT_ERR')) {
    return new ArchiveError('not a readable archive: it is not gzip-compressed, or it is damaged or cut short', { detail });
  }
  return new ArchiveError('not a readable archive (a gzip-compressed tar from tollgate export)', { detail });
}

/** The archive is larger than the limit (decompressed bytes): a 413 for the route. */
export class ArchiveTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`the archive is larger than ${limit} bytes`);
    this.name = 'ArchiveTooLarge';
    this.limit = limit;
  }
}

/** A fresh work directory under `dataDir`; `remove` deletes it and everything in it. */
export function workDir(dataDir: string, kind: 'export' | 'import'): { path: string; remove: () => void } {
  const path = join(resolve(dataDir), 'archive-work', `${kind}-${Date.now()}-${randomBytes(4).toString('hex')}`);
  mkdirSync(path, { recursive: true });
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface PreparedExport {
  readonly manifest: Manifest;
  /** The archive: tar, gzip-compressed. Read it once. */
  stream(): Readable;
}

/** Write every data table to `dir` and describe them; `config` is the redacted config text. */
export async function prepareExport(
  store: Store, opts: { dir: string; config: { text: string; source: 'file' | 'effective'; redacted: readonly string[] }; now?: () => number },
): Promise<PreparedExport> {
  const tables: Record<string, ManifestTable> = {};
  const files: { name: string; path: string }[] = [];
  for (const table of await dataTables(store)) {
    const name = `tables/${table.name}.native`;
    const path = join(opts.dir, `${table.name}.native`);
    const rows = await exportTable(store, table, path);
    tables[table.name] = { file: name, rows, columns: table.columns };
    files.push({ name, path });
  }
  const manifest: Manifest = {
    format: ARCHIVE_FORMAT,
    format_version: ARCHIVE_FORMAT_VERSION,
    tollgate_version: TOLLGATE_VERSION,
    schema_version: await schemaVersion(store),
    database: store.database,
    created_at: new Date((opts.now ?? Date.now)()).toISOString(),
    config: { source: opts.config.source, redacted: opts.config.redacted },
    tables,
  };
  const manifestBytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  const configBytes = Buffer.from(opts.config.text);
  const entries: TarEntry[] = [
    { name: 'manifest.json', size: manifestBytes.length, body: async function* () { yield manifestBytes; } },
    { name: 'config.yaml', size: configBytes.length, body: async function* () { yield configBytes; } },
    ...files.map((f): TarEntry => ({ name: f.name, size: statSync(f.path).size, body: () => createReadStream(f.path) })),
  ];
  return { manifest, stream: () => Readable.from(writeTar(entries)).pipe(createGzip()) };
}

/** Counts bytes through it; past `limit` it fails with ArchiveTooLarge. */
function byteLimit(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      seen += chunk.length;
      if (seen > limit) done(new ArchiveTooLarge(limit));
      else done(null, chunk);
    },
  });
}

/** The largest manifest.json or config.yaml an archive may hold (an export's are a few KiB). */
const MAX_TEXT_ENTRY = 4 * 1024 ** 2;

/** The files of an uploaded archive, unpacked into a work directory, and its checked manifest. */
export interface Unpacked {
  readonly manifest: Manifest;
  /** Table name -> path of its Native file. */
  readonly files: ReadonlyMap<string, string>;
}

/**
 * Unpack the gzip-compressed tar `body` into `dir`: only the three kinds of entry an archive has are accepted (no
 * other path is ever written), and at most `limit` bytes, compressed or not.
 */
export async function unpack(body: Readable, dir: string, limit: number): Promise<Unpacked> {
  const files = new Map<string, string>();
  const seen = new Set<string>();
  const target = (name: string, size: number): string => {
    if (seen.has(name)) throw new ArchiveError(`the archive holds the entry '${shown(name)}' twice`);
    seen.add(name);
    if (name === 'manifest.json' || name === 'config.yaml') {
      // read whole and parsed on the event loop: bounded by what its header declares, before a byte is written
      if (size > MAX_TEXT_ENTRY) throw new ArchiveError(`${name} is larger than ${MAX_TEXT_ENTRY / 1024 ** 2} MiB: not an archive this gateway wrote`);
      return join(dir, name);
    }
    const m = TABLE_ENTRY.exec(name);
    if (m === null) throw new ArchiveError(`unexpected entry '${shown(name)}' in the archive`);
    const path = join(dir, `table-${m[1]!}.native`);
    files.set(m[1]!, path);
    return path;
  };
  // `body` (the request) is piped in rather than made part of the pipeline, so a refusal does not destroy the socket
  // before the answer is sent; on failure the rest of the upload is read and dropped.
  const compressed = byteLimit(limit);
  body.pipe(compressed);
  let refused: unknown = null; // the reader's own error (the pipeline reports it as an abort)
  try {
    await pipeline(compressed, createGunzip(), byteLimit(limit), async (source: AsyncIterable<Uint8Array>) => {
      await readTar(source, target).catch((err: unknown) => {
        refused = err;
        throw err;
      });
    });
  } catch (caught) {
    body.unpipe(compressed);
    body.resume();
    const err = refused instanceof ArchiveError ? refused : caught;
    if (err instanceof ArchiveTooLarge || err instanceof ArchiveError) throw err;
    if (isSystemError(refused)) throw refused as Error;
    if (isSystemError(caught)) throw caught as Error;
    throw unreadable(isTarRefusal(refused) ? refused : caught);
  }
  if (!seen.has('manifest.json')) throw new ArchiveError('the archive has no manifest.json');
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch (err) {
    if (isSystemError(err)) throw err;
    throw new ArchiveError('manifest.json is not valid JSON', { detail: (err as Error).message });
  }
  return { manifest: checkManifest(manifest, files), files };
}

function checkManifest(m: unknown, files: ReadonlyMap<string, string>): Manifest {
  const bad = (why: string): never => {
    throw new ArchiveError(`manifest.json: ${why}`);
  };
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return bad(`it is ${kindOf(m)}, not an object`);
  const o = m as Record<string, unknown>;
  if (o.format !== ARCHIVE_FORMAT) bad(`format is not '${ARCHIVE_FORMAT}'`);
  if (typeof o.format_version !== 'number') bad(`format_version is ${kindOf(o.format_version)}, not a number (this gateway reads ${ARCHIVE_FORMAT_VERSION})`);
  if (o.format_version !== ARCHIVE_FORMAT_VERSION) bad(`format_version ${String(o.format_version)} is not supported (this gateway reads ${ARCHIVE_FORMAT_VERSION})`);
  if (typeof o.schema_version !== 'number') bad(`schema_version is ${kindOf(o.schema_version)}, not a number`);
  if (!Number.isInteger(o.schema_version)) bad('schema_version is not an integer');
  if (typeof o.tables !== 'object' || o.tables === null || Array.isArray(o.tables)) bad(`tables is ${kindOf(o.tables)}, not an object of table name to {file, rows, columns}`);
  const tables = o.tables as Record<string, unknown>;
  // An export always holds every data table: an archive with none is a mistake (a hand-made or damaged manifest),
  // not an import of nothing that answers 200.
  if (Object.keys(tables).length === 0) bad('tables is empty: the archive holds no table (an export holds every data table), so nothing was imported');
  for (const [name, t] of Object.entries(tables)) {
    const e = t as Partial<ManifestTable> | null;
    const at = `tables.${shown(name)}`;
    if (e === null || typeof e !== 'object' || !Number.isInteger(e.rows) || (e.rows as number) < 0) bad(`${at}.rows is not a count`);
    const cols = e!.columns;
    if (!Array.isArray(cols) || cols.length === 0 || !cols.every((c: Column) => typeof c?.name === 'string' && typeof c?.type === 'string')) bad(`${at}.columns is not a list of {name, type}`);
    if (!files.has(name)) bad(`${at}: its file tables/${shown(name)}.native is not in the archive`);
  }
  for (const name of files.keys()) if (!Object.hasOwn(tables, name)) bad(`tables/${name}.native is not described`);
  return m as Manifest;
}

export interface ImportResult {
  readonly imported: Record<string, number>;
  readonly skipped: Record<string, number>;
}

/**
 * Import an unpacked archive into `store`: every table is staged, its row count checked against the manifest and its
 * rows' values against what the gateway writes (src/store/import-checks.ts) before any row is inserted; then each
 * table gets the rows whose key it does not hold yet. `now`: the import's time (epoch ms), for the future-time rule.
 */
export async function importUnpacked(store: Store, unpacked: Unpacked, opts: { now?: number } = {}): Promise<ImportResult> {
  const now = opts.now ?? Date.now();
  const { manifest, files } = unpacked;
  const current = await schemaVersion(store);
  if (manifest.schema_version > current) {
    throw new ArchiveError(`the archive has schema version ${manifest.schema_version}; this store is at ${current}: upgrade Tollgate before importing it`);
  }
  const tables = new Map((await dataTables(store)).map((t) => [t.name, t]));
  for (const name of Object.keys(manifest.tables)) if (!tables.has(name)) throw new ArchiveError(`the store has no table ${shown(name)}`);
  for (const [name, t] of Object.entries(manifest.tables)) {
    const known = new Set(tables.get(name)!.columns.map((c) => c.name));
    const unknown = t.columns.filter((c) => !known.has(c.name)).map((c) => shown(c.name));
    if (unknown.length > 0) throw new ArchiveError(`table ${name} has no column ${unknown.slice(0, 10).join(', ')} in this store (the archive is from a newer schema)`);
  }
  const staged: StagedTable[] = [];
  try {
    for (const [name, t] of Object.entries(manifest.tables)) {
      let s: StagedTable;
      try {
        s = await stageTable(store, tables.get(name)!, t.columns, files.get(name)!);
      } catch (err) {
        // The engine's message names the work directory's files: it goes to the log, not to the client.
        throw new ArchiveError(`table ${name} cannot be loaded: its file tables/${name}.native is not a valid ClickHouse Native export of the columns the manifest lists`, { detail: (err as Error).message });
      }
      staged.push(s);
      if (s.rows !== t.rows) throw new ArchiveError(`tables/${name}.native holds ${s.rows} rows; the manifest says ${t.rows}`);
    }
    // every table checked before any is inserted: a refusal names all that is wrong, and nothing is imported
    const breaches: string[] = [];
    for (const s of staged) {
      const found = await ruleBreaches(s, now);
      if (found.length > 0) breaches.push(`table ${s.table}: ${found.join('; ')}`);
    }
    if (breaches.length > 0) throw new ArchiveError(breaches.join('; '));
  } catch (err) {
    for (const s of staged) await s.discard().catch(() => undefined);
    throw err;
  }
  const imported: Record<string, number> = {};
  const skipped: Record<string, number> = {};
  while (staged.length > 0) {
    const s = staged.shift()!;
    try {
      imported[s.table] = await s.commit();
    } catch (err) {
      for (const rest of staged) await rest.discard().catch(() => undefined);
      throw err;
    }
    skipped[s.table] = s.rows - imported[s.table]!;
  }
  return { imported, skipped };
}
