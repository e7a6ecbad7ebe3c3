// The alert and budget control plane: GET /api/alerts (the dashboard list, newest first, read/unread),
// POST /api/alerts/read (mark read), POST /api/alerts/test (a test notification to every enabled channel, with the
// outcome per channel), GET /api/budgets (spend against the daily and monthly budgets, the auto-switch state).
// The list's query is read as every /api read's is (QueryReader): an unknown, repeated or bad parameter is a 400
// TOLLGATE_ERR_INVALID_QUERY naming it, and an empty value counts as absent.

import type { FastifyPluginAsync } from 'fastify';
import type { AlertService } from '../alerts/service.js';
import type { BudgetService } from '../accounting/budget.js';
import { TollgateError } from '../core/errors.js';
import { QueryReader } from './analytics/params.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** GET /api/alerts: how many alerts a page lists by default, and at most. */
export const ALERT_LIST_LIMIT = { default: 50, max: 500 } as const;

export const alertRoutes: FastifyPluginAsync<{ alerts: AlertService; budget: BudgetService }> = async (app, { alerts, budget }) => {
  app.get('/api/alerts', async (req) => {
    const q = new QueryReader(req.query, ['limit', 'unread']);
    const limit = q.int('limit', 1, ALERT_LIST_LIMIT.max) ?? ALERT_LIST_LIMIT.default;
    const { alerts: list, unread } = await alerts.list({ unread: q.bool('unread'), limit });
    return { alerts: list, unread };
  });

  app.post('/api/alerts/read', async (req) => {
    const b = (req.body ?? {}) as { ids?: unknown; all?: unknown };
    if (b.all === true) return { marked: await alerts.markRead(null) };
    if (!Array.isArray(b.ids) || b.ids.length === 0 || b.ids.length > 1000 || !b.ids.every((id) => typeof id === 'string' && UUID.test(id))) {
      throw new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', "give 'ids' (1 to 1000 alert ids) or 'all': true", { param: 'ids' });
    }
    return { marked: await alerts.markRead(b.ids as string[]) };
  });

  app.post('/api/alerts/test', async () => ({ results: await alerts.test() }));

  app.get('/api/budgets', async () => {
    const s = await budget.refresh();
    const { at: _at, ...rest } = s;
    return rest;
  });
};
