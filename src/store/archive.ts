// The export archive (docs/security.md): one gzip-compressed POSIX tar holding
//
//   manifest.json           format, versions, created_at, and per table: its file, row count and columns
//   config.yaml             the config file, secrets replaced by ${TOLLGATE_REDACTED_<PATH>} references
//   tables/<table>.native   every data table, ClickHouse Native format (src/store/export.ts)
//
// Export writes the table files to a work directory under storage.data_dir first (the manifest needs their row
// counts, a tar header their sizes), then streams the archive from them; import streams the upload into a work
// directory, checks the manifest, and hands the files to the store. Nothing holds a whole table in memory.

import { createReadStream, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Store } from '../store/client.js';
import { dataTables, exportTable, schemaVersion, stageTable, type Column, type StagedTable } from '../store/export.js';
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
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveError';
  }
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
  const target = (name: string): string => {
    if (name === 'manifest.json' || name === 'config.yaml') return join(dir, name);
    const m = TABLE_ENTRY.exec(name);
    if (m === null) throw new ArchiveError(`unexpected entry '${name}' in the archive`);
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
    throw new ArchiveError(`not a readable archive (a gzip-compressed tar from tollgate export): ${(err as Error).message}`);
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch (err) {
    throw new ArchiveError(`the archive has no readable manifest.json: ${(err as Error).message}`);
  }
  return { manifest: checkManifest(manifest, files), files };
}

function checkManifest(m: unknown, files: ReadonlyMap<string, string>): Manifest {
  const bad = (why: string): never => {
    throw new ArchiveError(`manifest.json: ${why}`);
  };
  if (typeof m !== 'object' || m === null) return bad('not an object');
  const o = m as Record<string, unknown>;
  if (o.format !== ARCHIVE_FORMAT) bad(`format is not '${ARCHIVE_FORMAT}'`);
  if (o.format_version !== ARCHIVE_FORMAT_VERSION) bad(`format_version ${String(o.format_version)} is not supported (this gateway reads ${ARCHIVE_FORMAT_VERSION})`);
  if (!Number.isInteger(o.schema_version)) bad('schema_version is not an integer');
  if (typeof o.tables !== 'object' || o.tables === null) bad('tables is missing');
  for (const [name, t] of Object.entries(o.tables as Record<string, unknown>)) {
    const e = t as Partial<ManifestTable> | null;
    if (e === null || typeof e !== 'object' || !Number.isInteger(e.rows) || (e.rows as number) < 0) bad(`tables.${name}.rows is not a count`);
    const cols = e!.columns;
    if (!Array.isArray(cols) || cols.length === 0 || !cols.every((c: Column) => typeof c?.name === 'string' && typeof c?.type === 'string')) bad(`tables.${name}.columns is not a list of {name, type}`);
    if (!files.has(name)) bad(`tables.${name}: its file tables/${name}.native is not in the archive`);
  }
  for (const name of files.keys()) if (!(name in (o.tables as object))) bad(`tables/${name}.native is not described`);
  return m as Manifest;
}

export interface ImportResult {
  readonly imported: Record<string, number>;
  readonly skipped: Record<string, number>;
}

/**
 * Import an unpacked archive into `store`: every table is staged and its row count checked against the manifest
 * before any row is inserted; then each table gets the rows whose key it does not hold yet.
 */
export async function importUnpacked(store: Store, unpacked: Unpacked): Promise<ImportResult> {
  const { manifest, files } = unpacked;
  const current = await schemaVersion(store);
  if (manifest.schema_version > current) {
    throw new ArchiveError(`the archive has schema version ${manifest.schema_version}; this store is at ${current}: upgrade Tollgate before importing it`);
  }
  const tables = new Map((await dataTables(store)).map((t) => [t.name, t]));
  for (const name of Object.keys(manifest.tables)) if (!tables.has(name)) throw new ArchiveError(`the store has no table ${name}`);
  const staged: StagedTable[] = [];
  try {
    for (const [name, t] of Object.entries(manifest.tables)) {
      let s: StagedTable;
      try {
        s = await stageTable(store, tables.get(name)!, t.columns, files.get(name)!);
      } catch (err) {
        throw new ArchiveError(`tables/${name}.native cannot be loaded: ${(err as Error).message}`);
      }
      staged.push(s);
      if (s.rows !== t.rows) throw new ArchiveError(`tables/${name}.native holds ${s.rows} rows; the manifest says ${t.rows}`);
    }
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
