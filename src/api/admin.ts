// POST /api/admin/export and POST /api/admin/import: the whole record out and back in (src/archive). The gate lets
// only a re-authentication token of an admin key reach them (src/gate). One export or import runs at a time.

import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import { redactConfigText, renderConfig } from '../config/redact.js';
import { TollgateError } from '../core/errors.js';
import type { Store } from '../store/client.js';
import { ArchiveError, ArchiveTooLarge, importUnpacked, prepareExport, unpack, workDir, type ImportResult } from '../store/archive.js';

/** Largest archive import accepts, compressed or unpacked: 16 GiB. */
export const IMPORT_MAX_BYTES = 16 * 1024 ** 3;

export interface AdminRoutesOptions {
  readonly store: Store;
  readonly config: ConfigHolder;
  /** The config file the process runs from; without it the archive holds a rendering of the effective config. */
  readonly configFile?: string;
  readonly importMaxBytes?: number;
  /** The batch writer: an export first writes every row acknowledged before it (its spool, the last flush). */
  readonly writer?: { caughtUp(boundMs: number): Promise<number> };
}

const ARCHIVE_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream'];

export const adminRoutes: FastifyPluginAsync<AdminRoutesOptions> = async (app, opts) => {
  const { store, config } = opts;
  const limit = opts.importMaxBytes ?? IMPORT_MAX_BYTES;
  // Serialises exports and imports: an export never sees half an import.
  let tail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(op: () => Promise<T>): Promise<T> => {
    const next = tail.then(op, op);
    tail = next.catch(() => undefined);
    return next;
  };

  // The upload reaches the handler as the request stream (this plugin only): it is unpacked to disk as it arrives.
  app.addContentTypeParser(ARCHIVE_TYPES, (_req, payload, done) => done(null, payload));

  app.post('/api/admin/export', async (req, reply) => {
    const effective = () => ({ ...renderConfig(config.current), source: 'effective' as const });
    const configText = () => {
      if (opts.configFile === undefined) return effective();
      try {
        return { ...redactConfigText(readFileSync(opts.configFile, 'utf8')), source: 'file' as const };
      } catch (err) {
        // The file is gone, unreadable or holds an edit the gateway refused: the text of the config it runs on goes
        // instead (its `${VAR}` references kept: a rendering of the running config would hold their values).
        req.log.warn({ err }, 'export: the config file cannot be read as a config; the archive holds the text the gateway runs on');
        if (config.fileText !== null) return { ...redactConfigText(config.fileText), source: 'file' as const };
        return effective();
      }
    };
    // Every request acknowledged before the export is in it: what the spool holds goes to the store first. A store
    // that refuses or lags (a backlog), or a spool whose disk refuses, would make an archive without them: refused.
    const waiting = opts.writer === undefined ? 0 : await opts.writer.caughtUp(config.current.storage.request_timeout_ms);
    if (waiting !== 0) {
      const what = waiting > 0 ? `${waiting} requests acknowledged before the export are` : 'requests acknowledged before the export are';
      throw new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', `${what} spooled and not yet in the store (it refuses or lags, or the spool's disk refuses): the archive would miss them; retry once /ready answers 200`);
    }
    const work = workDir(config.started.storage.data_dir, 'export');
    let archive: Readable;
    let created: string;
    try {
      const prepared = await exclusive(() => prepareExport(store, { dir: work.path, config: configText() }));
      archive = prepared.stream();
      created = prepared.manifest.created_at;
    } catch (err) {
      work.remove();
      throw err;
    }
    archive.once('close', work.remove);
    reply.raw.once('close', () => archive.destroy());
    const stamp = created.replace(/[:.]/g, '-');
    return reply
      .header('content-type', 'application/gzip')
      .header('content-disposition', `attachment; filename="tollgate-export-${stamp}.tar.gz"`)
      .send(archive);
  });

  app.post('/api/admin/import', async (req, reply): Promise<ImportResult> => {
    const body = req.body as Readable | undefined;
    if (body === undefined || body === null || typeof (body as Readable).pipe !== 'function') {
      throw new TollgateError('TOLLGATE_ERR_UNSUPPORTED_MEDIA_TYPE', `send the archive from POST /api/admin/export as the body, with content-type ${ARCHIVE_TYPES[0]}`);
    }
    const work = workDir(config.started.storage.data_dir, 'import');
    try {
      return await exclusive(async () => importUnpacked(store, await unpack(body, work.path, limit)));
    } catch (err) {
      if (err instanceof ArchiveTooLarge) {
        reply.header('connection', 'close');
        throw new TollgateError('TOLLGATE_ERR_BODY_TOO_LARGE', `the archive is larger than the import limit of ${err.limit} bytes`);
      }
      if (err instanceof ArchiveError) {
        // What the gateway saw (a path of the work directory, the engine's message) is for the operator's log only.
        if (err.detail !== undefined) req.log.info({ detail: err.detail }, `import refused: ${err.message}`);
        throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', `archive: ${err.message}`);
      }
      throw err;
    } finally {
      work.remove();
    }
  });
};
