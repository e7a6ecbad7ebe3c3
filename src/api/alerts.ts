// The alert and budget control plane: GET /api/alerts (the dashboard list, newest first, read/unread),
// POST /api/alerts/read (mark read), POST /api/alerts/test (a test notification to every enabled channel, with the
// outcome per channel), GET /api/budgets (spend against the daily and monthly budgets, the auto-switch state).

import type { FastifyPluginAsync } from 'fastify';
import type { AlertService } from '../alerts/service.js';
import type { BudgetService } from '../accounting/budget.js';
import { TollgateError } from '../core/errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function invalid(message: string, param: string): TollgateError {
  return new TollgateError('TOLLGATE_ERR_INVALID_REQUEST', message, { param });
}

export const alertRoutes: FastifyPluginAsync<{ alerts: AlertService; budget: BudgetService }> = async (app, { alerts, budget }) => {
  app.get('/api/alerts', async (req) => {
    const q = req.query as Record<string, unknown>;
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw invalid("'limit' must be an integer from 1 to 500", 'limit');
    if (q.unread !== undefined && q.unread !== 'true' && q.unread !== 'false') throw invalid("'unread' must be true or false", 'unread');
    const { alerts: list, unread } = await alerts.list({ unread: q.unread === 'true', limit });
    return { alerts: list, unread };
  });

  app.post('/api/alerts/read', async (req) => {
    const b = (req.body ?? {}) as { ids?: unknown; all?: unknown };
    if (b.all === true) return { marked: await alerts.markRead(null) };
    if (!Array.isArray(b.ids) || b.ids.length === 0 || b.ids.length > 1000 || !b.ids.every((id) => typeof id === 'string' && UUID.test(id))) {
      throw invalid("give 'ids' (1 to 1000 alert ids) or 'all': true", 'ids');
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
