// The usage analytics routes under /api/usage/* (GET /api/usage itself is usage.ts, registered by app.ts on its
// own): the request log, the cost report, the projection, combos, hourly and the overview. Every sum is read through
// store/aggregate.ts, so every report agrees with /api/usage to the cent; only the request log lists raw rows.

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../../config/watch.js';
import type { Store } from '../../store/client.js';
import { comboRoutes } from './combos.js';
import { costRoutes } from './cost.js';
import { hourlyRoutes } from './hourly.js';
import { logRoutes } from './logs.js';
import { overviewRoutes } from './overview.js';
import { projectionRoutes } from './projection.js';

export interface AnalyticsOptions {
  readonly store: Store;
  readonly config: ConfigHolder;
  /** The clock the reports' windows are taken from (tests fix it). */
  readonly now?: () => number;
}

export const analyticsRoutes: FastifyPluginAsync<AnalyticsOptions> = async (app, opts) => {
  const { store, config } = opts;
  const now = opts.now ?? Date.now;
  await app.register(logRoutes, { store, now });
  await app.register(costRoutes, { store, config, now });
  await app.register(projectionRoutes, { store, config, now });
  await app.register(comboRoutes, { store, config, now, live: opts.now === undefined });
  await app.register(hourlyRoutes, { store, config, now });
  // On the real clock, windows that end now read their current hour from the rollup (aggregate's openEnd).
  await app.register(overviewRoutes, { store, now, live: opts.now === undefined });
};
