// The app's spool (app.ts): its directory taken for this process (dir-lock.ts), then opened. The segments an earlier
// process left are listed at once and read in the background (leftovers.ts); what the reading found is logged and
// counted once it is done.

import type { FastifyBaseLogger } from 'fastify';
import { lockDir, unusableDir } from './dir-lock.js';
import type { RequestRow } from './rows.js';
import { Spool, type SpoolOptions, type SpoolPort } from './spool.js';

export interface OpenedSpool {
  readonly spool: SpoolPort<RequestRow>;
  /** Let another process take the directory (after the spool is closed). */
  release(): void;
}

/**
 * Lock `opts.dir` and open the spool there (`port`: the benchmark's memory spool, no lock). A second gateway on the
 * directory, or one it cannot write (read-only, another user's), is refused here with one message naming it (main.ts
 * prints it and exits 1). `leftover` is given each row an earlier process left; `recovered` the count of its rows and
 * the requests it left in flight, once they are read.
 */
export function openSpool(o: { opts: SpoolOptions; port?: (opts: SpoolOptions) => SpoolPort<RequestRow>; log: FastifyBaseLogger; leftover: (row: RequestRow) => void; recovered: (n: number) => void }): OpenedSpool {
  const { opts, log } = o;
  const lock = o.port === undefined ? lockDir(opts.dir) : null;
  if (lock?.replaced) log.warn({ dir: opts.dir, owner: lock.replaced }, 'storage: took over the spool lock of a gateway that is gone');
  let spool: SpoolPort<RequestRow>;
  try {
    spool = o.port?.(opts) ?? new Spool<RequestRow>(opts, (row) => String(row.request_id), o.leftover);
  } catch (err) {
    lock?.release();
    throw unusableDir(opts.dir, err);
  }
  const listed = spool.leftovers.counts();
  if (listed.segments > 0) log.info({ segments: listed.segments, bytes: spool.bytes }, `reading the ${listed.segments} spool segments an earlier process left (${spool.bytes} bytes), after listening`);
  void spool.leftovers.done.then((read) => {
    const { rows, interrupted, segments } = spool.leftovers.counts();
    if (!read || rows + interrupted === 0) return;
    o.recovered(rows + interrupted);
    log.warn({ rows, interrupted, segments }, `replaying ${rows} usage rows left in the spool by an earlier process, and recording ${interrupted} requests it left in flight as interrupted`);
  });
  return { spool, release: () => lock?.release() };
}
