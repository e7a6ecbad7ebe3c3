// GET /health: the process is up. GET /ready: the store has been opened and migrated (the app does that in the
// background after it listens), the spool can write to its disk, and the store answers a query and takes inserts.
// While it does not,
// requests are still served and recorded to the spool; /ready says 503 with the reason, so a load balancer or an
// operator sees it (docs/recording.md).

import type { FastifyPluginAsync } from 'fastify';
import { TollgateError, errorBody } from '../core/errors.js';
import type { Store } from '../store/client.js';

export interface StoreState {
  /** Why the store is not open yet (being opened and migrated, or retrying after a failure), or null once it is. */
  readonly opening: string | null;
  /** False from a failed insert until the next one that succeeds. */
  readonly up: boolean;
  readonly lastError: unknown;
  /** Rows in the spool, not yet in ClickHouse. */
  readonly spooled: number;
  /** Why the spool cannot write to its disk (full, read-only), or null. */
  readonly spoolFailure: unknown;
}

const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);

export const healthRoutes: FastifyPluginAsync<{ store: Store; state: () => StoreState; instanceId: string }> = async (app, { store, state, instanceId }) => {
  // The instance id lets GET /api/tunnel tell this process from another one behind the same public URL.
  app.get('/health', async (_req, reply) => {
    reply.header('x-tollgate-instance', instanceId);
    return { status: 'ok' };
  });
  app.get('/ready', async (_req, reply) => {
    const kind = store.embedded ? 'embedded' : 'server';
    const s = state();
    let e: TollgateError | null = null;
    if (s.opening !== null) e = new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', `ClickHouse (${kind}) is not open yet: ${s.opening}; ${s.spooled} usage rows wait in the spool`);
    else if (s.spoolFailure !== null) e = new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', `the spool cannot write to its disk (${reason(s.spoolFailure)}); ${s.spooled} usage rows wait in memory`);
    else if (!(await store.ping())) e = new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', `ClickHouse (${kind}) does not answer; ${s.spooled} usage rows wait in the spool`);
    else if (!s.up) e = new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', `ClickHouse (${kind}) refuses inserts (${reason(s.lastError)}); ${s.spooled} usage rows wait in the spool`);
    if (e === null) return { status: 'ready', store: kind, spooled: s.spooled };
    return reply.code(e.status).send(errorBody(e, null));
  });
};
