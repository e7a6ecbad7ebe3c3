// What the data-plane routes need, built once by app.ts.

import type { ConfigHolder } from '../config/watch.js';
import type { Ledger } from '../ledger/ledger.js';
import type { Router } from '../routing/router.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { Upstream } from './upstream.js';

export interface GatewayContext {
  readonly config: ConfigHolder;
  /** The one way out to providers. */
  readonly upstream: Upstream;
  readonly tracing: Tracing;
  readonly ledger: Ledger;
  readonly router: Router;
  /** True once the server is shutting down: responses then close their connection instead of keeping it alive. */
  closing(): boolean;
}
