// Data-plane routes (/v1/*). Handlers unpack and delegate to the pipeline.

import type { FastifyPluginAsync } from 'fastify';
import { listModels } from '../routing/resolve.js';
import { CHAT_ROUTE, handleChat } from './chat.js';
import type { GatewayContext } from './context.js';

export const proxyRoutes: FastifyPluginAsync<{ ctx: GatewayContext }> = async (app, { ctx }) => {
  app.post(CHAT_ROUTE, (req, reply) => handleChat(ctx, req, reply));

  app.get('/v1/models', async () => ({
    object: 'list',
    data: listModels(ctx.config.current).map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.provider, kind: m.config.kind })),
  }));
};
