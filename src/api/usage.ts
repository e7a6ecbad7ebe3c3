// GET /api/usage lives with the other usage reports in api/analytics/; app.ts and the tests import it from here.

export { usageRoutes } from './analytics/usage.js';
