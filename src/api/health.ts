// GET /health: the process is up. GET /ready: the store answers a query.

import type { FastifyPluginAsync } from 'fastify';
import { TollgateError, errorBody } from '../errors.js';
import type { Store } from '../store/client.js';

export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_req, reply) => {
    if (await store.ping()) return { status: 'ready', store: store.embedded ? 'embedded' : 'server' };
    const e = new TollgateError('TOLLGATE_ERR_STORE_UNAVAILABLE', 'ClickHouse does not answer');
    return reply.code(e.status).send(errorBody(e, null));
  });
};
