// build(options) -> FastifyInstance. Wires the three ledgers to one record stream and registers the plugins in order.
// The store is opened and migrated in the background once the server listens (or by its first use), so the gateway
// answers before the store is there: rows wait in the spool, /ready says why it is not ready, and the background
// jobs that read the store (keep-alive, alerts) start once it is (`tollgate.storeReady`). main.ts, tests, benches run it.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { join } from 'node:path';
import type { TracerProvider } from '@opentelemetry/api';
import { installGate } from './gate/index.js';
import { ConfigHolder } from './config/watch.js';
import type { Config } from './config/types.js';
import { weakKeyReason } from './config/load.js';
import { TollgateError, errorBody } from './core/errors.js';
import { registerJsonBody } from './core/json-body.js';
import { lazyCompilersFactory } from './core/lazy-validator.js';
import { badQuery, clientErrorHandler, continueWithinLimit, frameworkErrors, refuseConnect, serveUnknownExpectations } from './core/http-errors.js';
import { healthRoutes } from './api/health.js';
import { quotaRoutes } from './api/quota.js';
import { usageRoutes } from './api/usage.js';
import { analyticsRoutes } from './api/analytics/index.js';
import { Dispatcher } from './providers/transport.js';
import { dataPlaneEndpoint, noRoute, proxyRoutes } from './pipeline/routes.js';
import { answerRefusal, clientLeft, isGateRefusal } from './pipeline/request.js';
import { Upstream } from './pipeline/upstream.js';
import { Drain, STORE_STEPS_MS } from './pipeline/drain.js';
import type { GatewayContext } from './pipeline/context.js';
import { openStore, type Store } from './store/client.js';
import { StoreOpening } from './store/opening.js';
import { interruptedRow, REQUEST_COLUMNS, toRow, type RequestRow } from './store/rows.js';
import { rowsSpan, settleLanded, startSpan, storedRequests } from './store/rollup-repair.js';
import type { RowLines } from './store/segment.js';
import { BatchWriter } from './store/writer.js';
import type { SpoolOptions, SpoolPort } from './store/spool.js';
import { openSpool } from './store/spool-open.js';
import { Metrics } from './telemetry/metrics.js';
import { Tracing } from './telemetry/tracing.js';
import { Ledger } from './ledger/ledger.js';
import { uuidv7 } from './ledger/uuidv7.js';
import { Router } from './routing/router.js';
import { StartHold } from './routing/start-hold.js';
import { CredentialStore } from './providers/credentials.js';
import { OAuthSession } from './providers/oauth.js';
import { switchTargetExists } from './routing/auto-switch.js';
import { KeepAlive } from './services/keepalive.js';
import { QuotaService } from './accounting/quota.js';
import { UnstoredCalls } from './accounting/unstored.js';
import { createAlerting, type Alerting } from './alerts/index.js';
import { alertRoutes } from './api/alerts.js';
import { adminRoutes } from './api/admin.js';
import { catalogRoutes } from './api/catalog.js';
import { providerConnectRoutes } from './api/provider-connect.js';
import { providerRoutes } from './api/providers.js';
import { ReportedQuotaStore } from './accounting/reported-quota.js';
import { watchReportedQuota } from './accounting/reported-gauges.js';
import { pricingWarnings } from './config/pricing.js';
import { watchBudget, watchCooldowns, watchQuota } from './accounting/gauges.js';
import { LiveRequests, watchInflight } from './telemetry/live.js';
import { liveRoutes } from './api/live.js';
import { settingsRoutes } from './api/settings.js';
import { statusRoutes } from './api/status.js';
import { consoleRoutes } from './api/console.js';
import { TOLLGATE_VERSION } from './store/archive.js';
import { randomUUID } from 'node:crypto';
import { IdleGc } from './core/idle-gc.js';
import { stopPretenuring } from './core/pretenuring.js';
import { within } from './core/within.js';
import { everyPeriod } from './core/every.js';

export interface BuildOptions {
  /** A validated config, or a holder whose `current` is replaced by live edits. */
  readonly config: Config | ConfigHolder;
  /** Defaults to the global provider (the SDK main.ts started, or the API's no-op). Tests pass an in-memory one. */
  readonly tracerProvider?: TracerProvider;
  readonly logger?: FastifyServerOptions['logger'];
  /**
   * The spool the batch writer uses (default: the disk spool under data_dir/spool). The benchmark passes one that
   * keeps rows in memory, to measure what the disk spool costs on the request path.
   */
  readonly spool?: (opts: SpoolOptions) => SpoolPort<RequestRow>;
  /** Collect Node process metrics into this app's registry (default true). */
  readonly processMetrics?: boolean;
  /** The config file the app runs from (main.ts): copied, secrets redacted, into exports. */
  readonly configFile?: string;
}

export interface Tollgate {
  readonly config: ConfigHolder;
  readonly store: Store;
  readonly writer: BatchWriter<RequestRow>;
  readonly metrics: Metrics;
  readonly ledger: Ledger;
  readonly router: Router;
  readonly alerting: Alerting;
  /**
   * Resolves once the store is open and migrated and the jobs that read it (keep-alive, alerts) have started;
   * rejects when the app closes before that, or with the reason when the store cannot be opened at all (refused
   * credentials: main.ts then stops). Requests are served before it; their rows wait in the spool.
   */
  readonly storeReady: Promise<void>;
  /** The client requests in flight (GET /api/live, tollgate_inflight_*). */
  readonly live: LiveRequests;
  /** A random id taken at start: /health answers it (x-tollgate-instance), GET /api/tunnel compares it. */
  readonly instanceId: string;
  /** Every route registered, as fastify matched it (method and pattern): what the gate and its tests go by. */
  readonly routes: readonly { readonly method: string; readonly url: string }[];
}

declare module 'fastify' {
  interface FastifyInstance { tollgate: Tollgate }
}

/**
 * When the embedded engine loads after listening: once no request has begun or been in flight for 50 ms, within a
 * second at most. Its load takes the event loop for about 250 ms (docs/benchmarks.md, "Where the start goes").
 */
const QUIET_OPEN = { quietMs: 50, maxMs: 1000 } as const;
/** How long a stop waits for the records of the requests that ended with the drain (the onClose hook). */
const RECORDS_WAIT_MS = 5000;

export async function build(opts: BuildOptions): Promise<FastifyInstance> {
  stopPretenuring(); // a request's objects die young: V8 must not make them old (src/core/pretenuring.ts)
  const holder = opts.config instanceof ConfigHolder ? opts.config : new ConfigHolder(opts.config);
  const cfg = holder.current;
  const app = Fastify({
    logger: opts.logger ?? { level: 'info', redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-goog-api-key"]'] },
    bodyLimit: cfg.server.body_limit_bytes,
    // A client has this long to send its whole request: a body that never came held its socket for ever (fastify's
    // default turns Node's limit off). Not the answer's time: a stream runs as long as the model writes. Node enforces
    // it when it looks at its connections (every 30 s by default; here a tenth of the limit, 1 to 30 s), and only when
    // the server is made with it (with the headers' limit, 60 s, no longer than it).
    requestTimeout: cfg.server.request_timeout_s * 1000,
    http: {
      requestTimeout: cfg.server.request_timeout_s * 1000,
      headersTimeout: cfg.server.request_timeout_s === 0 ? 60_000 : Math.min(60_000, cfg.server.request_timeout_s * 1000),
      connectionsCheckingInterval: Math.min(30_000, Math.max(1000, cfg.server.request_timeout_s * 100)),
    },
    // Per-request access logs would double the I/O of the request path; the usage row is the access log.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
    // The client IP (rate limits, logs) is the socket address unless the peer is a trusted proxy (restart to change).
    trustProxy: cfg.server.trust_proxy.length === 0 ? false : [...cfg.server.trust_proxy],
    // Malformed URLs and bytes the HTTP parser refuses are answered in the one error shape too (http-errors.ts).
    frameworkErrors,
    clientErrorHandler: clientErrorHandler({ newRequestId: () => uuidv7() }),
    // Fastify's schema compilers (and Ajv) are loaded by the first route that needs one, not at start.
    schemaController: { compilersFactory: lazyCompilersFactory },
  });
  const log: FastifyBaseLogger = app.log;
  serveUnknownExpectations(app.server);
  refuseConnect(app.server, app.log);
  continueWithinLimit(app.server, cfg.server.body_limit_bytes);

  // Nothing is loaded or connected here: the store opens (and migrates) in the background, see storeReady below.
  const base = openStore(cfg.storage);
  const opening = new StoreOpening(base, {
    layout: { cluster: cfg.storage.cluster, sharded: cfg.storage.sharded },
    events: {
      failed: (err, attempt, retryMs) =>
        Number.isFinite(retryMs)
          ? log.error({ err, attempt, retryMs: Math.round(retryMs) }, 'storage: cannot open or migrate the store yet; usage rows wait in the spool')
          : log.fatal({ err }, 'storage: the store cannot be opened, and retrying will not change that'),
      ready: (ms, applied) => log.info({ ms: Math.round(ms), migrations: applied }, 'storage: store open'),
    },
  });
  // Every reader and writer of the app waits for the opening (and is refused while it fails), and for the spool's
  // leftovers to be read: the quota and the budget count their rows.
  const store = base.gated({ wait: () => (spool.leftovers.reading ? spool.leftovers.done.then(() => opening.wait()) : opening.wait()) });

  // Rows go to the spool (data_dir/spool unless storage.spool.dir) first; what an earlier process left there is
  // replayed before anything new.
  const spoolOpts: SpoolOptions = {
    dir: cfg.storage.spool.dir || join(cfg.storage.data_dir, 'spool'), commitMs: cfg.storage.spool.commit_ms, maxBytes: cfg.storage.spool.max_bytes, columns: REQUEST_COLUMNS,
  };
  // One list of the billed calls not yet written, for the quota and the budget: the rows an earlier process left in the
  // spool (as the spool reads them) and this process's records (the ledger feeds it once: the budget's sink,
  // alerting.published); the writer's `written` clears it.
  const unstored = new UnstoredCalls();
  // One process per spool directory (src/store/dir-lock.ts), released on close; leftovers are read after listening.
  const { spool, release: releaseSpool } = openSpool({ opts: spoolOpts, port: opts.spool, log, leftover: (row) => unstored.addRow(row), recovered: (n) => metrics.rowsRecovered.inc(n) });
  // The recording gauges read the spool and the writer at scrape time, after both exist.
  const metrics = new Metrics(() => ({ rows: spool.rows, bytes: spool.bytes, oldestMs: spool.oldest, up: writer.up }), { processMetrics: opts.processMetrics });
  metrics.declareConfigured(cfg);
  holder.onChange((next) => metrics.declareConfigured(next));
  const b = cfg.storage.batch;
  // A leftover segment already in the table is not replayed and its rollups are made whole (docs/recording.md). On
  // both paths: the embedded engine forgets the views' deduplication when it restarts, and a server remembers only
  // the last blocks of every replica together (non_replicated_deduplication_window), which a replica down a while
  // (its insert landed, its answer lost) outlives.
  const landed = { settleLanded: (ids: readonly string[], rows: RowLines) => settleLanded(store, ids, startSpan(rows)) };
  // A request left in flight whose row is in the store already (it went there from memory while the disk was full, its
  // marker left on the disk) is not recorded as interrupted over it.
  const storedOf = (ids: readonly string[], rows: readonly RequestRow[]) => storedRequests(store, ids, rowsSpan(rows));
  const logDropped = everyPeriod((rows, reason) => log.error({ rows, reason }, 'usage rows dropped'));
  const writer = new BatchWriter<RequestRow>(store, 'requests', spool, { maxRows: b.max_rows, flushMs: b.flush_ms, storedOf, ...landed }, {
    written: (n, ids) => {
      metrics.rowsWritten.inc(n);
      // Before the evaluator looks (alerting.written, which also takes these rows off the list of records not yet
      // written that the budget and the quota share): a quota snapshot taken before these rows is not served again.
      if (n > 0) quota.stored(ids);
      alerting.written(ids);
      keepalive.written(ids);
    },
    dropped: (n, reason) => {
      metrics.rowsDropped.inc({ reason }, n);
      logDropped(n, reason);
    },
    error: (err, attempt) => log.debug({ err, attempt }, 'usage insert failed; retrying'),
    state: (up, err) => {
      if (up) log.info({ spooled: spool.rows }, 'storage is back: spooled usage rows are being written');
      // At a stop (the store closing, or not open yet) the rows stay for the next start: no outage to raise.
      else if (closed) log.info({ spooled: spool.rows }, 'stopping: usage rows the store did not take stay in the spool for the next start');
      else log.error({ err, spooled: spool.rows }, 'storage down: usage rows are kept in the spool and retried with backoff');
    },
  });

  const ledger = new Ledger((err) => log.error({ err }, 'usage sink failed'));
  ledger.subscribe((r) => writer.enqueue(toRow(r)));
  // A request in flight has its snapshot in the spool: if the process dies, it is recorded as interrupted.
  let begun = 0; // requests begun, for the store's opening (it waits for a quiet moment: onListen below)
  ledger.subscribeBegin((id, snapshot) => {
    begun++;
    writer.begin(id, () => interruptedRow(snapshot()));
  });
  ledger.subscribe((r) => metrics.observe(r));
  // Quiet after proxied requests: a young collection, then a full one, give back what V8 grew under load (src/core/idle-gc.ts).
  const idleGc = new IdleGc({ idleS: () => holder.current.server.idle_gc_s, begun: () => begun, inFlight: () => spool.inFlight, collected: (ms) => {
    metrics.idleGc.inc();
    log.debug({ ms: Math.round(ms) }, 'quiet: one full garbage collection');
  } });
  const live = new LiveRequests(() => holder.current);
  live.attach(ledger);
  watchInflight(metrics, live);
  const instanceId = randomUUID();

  const dispatcher = new Dispatcher(() => holder.current.server.upstream_answer_limit_bytes);
  // What providers report on their responses (rate-limit headers), observed on the dispatcher: /api/quota, gauges, alerts.
  const reported = new ReportedQuotaStore();
  dispatcher.onResponse((e) => reported.observe(e));
  watchReportedQuota(metrics, { store: reported, config: () => holder.current });
  // The one way out to providers, for the pipeline and the keep-alive pings alike.
  const upstream = new Upstream(dispatcher);
  // Quota from the record; combos skip a provider whose quota is used up. Budgets and alerts: evaluated on a timer and
  // shortly after each record; the budget gate drives the auto-switch. Both are the router's gates, given at birth.
  const quota = new QuotaService(store, () => holder.current, { fence: writer, unstored });
  const alerting = createAlerting({ store, config: holder, quota, metrics, log, fence: writer, unstored, reported: () => reported.all((id) => Object.hasOwn(holder.current.providers, id)) });
  // OAuth providers: tokens stored (encrypted) under data_dir by `tollgate connect`, refreshed before they expire.
  const credentials = new CredentialStore(cfg.storage.data_dir);
  // Until the first evaluation after this start (alerting.evaluated, below), a request whose routing reads the budget's or the
  // quota's figures waits for them, storage.request_timeout_ms at most from the first one held (routing/start-hold.ts).
  const hold = new StartHold({
    boundMs: () => holder.current.storage.request_timeout_ms,
    expired: (ms, waiting) => log.warn({ ms, waiting }, 'routing: the budget and quota figures are not known yet (the store is not open): requests are routed without them'),
  });
  const router = new Router(() => holder.current, {
    gates: { quota, budget: alerting.budget, hold },
    onCool: (connectionId, reason) => metrics.cooled(connectionId, reason),
    tokens: (providerId, settings) => new OAuthSession(providerId, settings, credentials),
  });
  // The gauges read the cached snapshots (the quota engine's, the budget's) and the router's cooldowns: a scrape
  // never queries the store.
  watchCooldowns(metrics, () => holder.current, router);
  watchQuota(metrics, quota);
  watchBudget(metrics, alerting.budget);
  // The budget and the quota count a record until its row is stored (the writer's `written`, above).
  ledger.subscribe((r) => alerting.published(r));
  const keepalive = new KeepAlive({ config: cfg, ledger, upstream, router, store }, { log });
  const sw = cfg.budgets.auto_switch;
  if (sw.enabled && sw.to && !switchTargetExists(cfg, sw.to)) log.warn({ to: sw.to }, 'budgets.auto_switch.to names no configured model or combo: auto-switch is off');
  for (const [i, k] of cfg.server.api_keys.entries()) {
    const reason = weakKeyReason(k.key);
    // A public host with such a key never gets here (config validation); on loopback it is allowed, with a warning.
    if (reason !== null) log.warn({ path: `server.api_keys[${i}].key` }, `server.api_keys[${i}].key ${reason}: accepted on a loopback address only`);
  }
  if (cfg.server.api_keys.length === 0) {
    log.warn('no server.api_keys configured: serving without authentication (loopback only)');
    // The gate answers loopback names only without keys (src/gate/origin.ts): a tunnel's public name gets 403s.
    if (cfg.server.public_url !== '') log.warn({ path: 'server.public_url' }, 'server.public_url is set but there are no server.api_keys: requests through it are refused (403); configure keys to serve it');
  }
  const warnPricing = (c: Config) => pricingWarnings(c).forEach((w) => log.warn({ path: w.path }, w.message));
  warnPricing(cfg);
  holder.onChange((next) => {
    warnPricing(next);
    dispatcher.reconcile(next.providers);
    router.reconfigure(next);
    // A quota changed: /api/quota and the combos' verdict take it now, not when the last snapshot expires.
    quota.reconfigured();
    keepalive.reconfigure(next);
    alerting.reconfigure(next);
    metrics.configReloads.inc({ result: 'applied' });
  });

  // JSON only: any other content type is a 415 rather than a string the handlers would have to reject.
  app.removeContentTypeParser('text/plain');
  // Collected once, depth-checked before parsing, bytes released once decoded (src/core/json-body.ts).
  registerJsonBody(app, { limit: cfg.server.body_limit_bytes, maxDepth: () => holder.current.server.json_max_depth });
  const routes: { method: string; url: string }[] = [];
  // The jobs that read the store start once it is open; `closed` keeps a late opening from starting them.
  let closed = false;
  const storeReady = opening.ready.then(async () => {
    if (!(await spool.leftovers.done) || closed) return;
    // Recovers open windows from the store (requests served meanwhile were buffered by it).
    await keepalive.start();
    if (closed) return;
    await alerting.start();
  });
  storeReady.catch(() => undefined); // closed before the store opened: nothing to report
  // The first evaluation has run, or never will (the start failed): the requests held are routed (a stop refuses
  // them first: preClose). Not storeReady's own end: alerting.start waits for the evaluations a backlog being written asks for too.
  void alerting.evaluated.then(() => hold.release());
  storeReady.then(() => hold.release(), () => hold.release());
  app.decorate('tollgate', { config: holder, store, writer, metrics, ledger, router, alerting, storeReady, live, instanceId, routes });
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routes.push({ method, url: r.url });
  });
  await installGate(app, { config: holder, metrics });

  // Draining (src/pipeline/drain.ts): close() waits for in-flight requests, up to server.shutdown_timeout_s; a
  // connection that finishes one then closes rather than sit in keep-alive (fastify's keepAliveTimeout is 72 s), so
  // every response sent while closing says so. A request that comes on an open connection while draining is served
  // (fastify's bare 503 for it had no row and not the error shape).
  const drain = new Drain();
  app.addHook('onRequest', (req, reply, done) => {
    drain.track(reply.raw);
    done(badQuery(req.url) ?? undefined);
  });
  app.addHook('preClose', (done) => {
    hold.stop(); // requests held for the first evaluation are refused (503), not routed on unknown figures
    drain.begin(app.server, () => holder.current.server.shutdown_timeout_s);
    done();
  });
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (drain.closing) reply.header('connection', 'close');
    done(null, payload);
  });
  const ctx: GatewayContext = { config: holder, upstream, tracing: new Tracing(opts.tracerProvider), ledger, router, closing: () => drain.closing };
  // A path a wildcard took without a route of its own is answered its 404, unless the client left: then it is a hangup.
  app.setErrorHandler((err, req, reply) => answerRefusal(ctx, req, reply, isGateRefusal(err) || clientLeft(err, req) ? err : (noRoute(req) ?? err), dataPlaneEndpoint(req)));
  app.setNotFoundHandler((req, reply) => {
    const e = new TollgateError('TOLLGATE_ERR_NOT_FOUND', `no route for ${req.method} ${req.url.split('?')[0]}`);
    return reply.code(e.status).send(errorBody(e, null));
  });

  await app.register(proxyRoutes, { ctx });
  await app.register(usageRoutes, { store });
  await app.register(analyticsRoutes, { store, config: holder });
  await app.register(quotaRoutes, { config: holder, router, quota, reported });
  await app.register(alertRoutes, { alerts: alerting.alerts, budget: alerting.budget });
  await app.register(healthRoutes, { store, instanceId, state: () => ({ opening: spool.leftovers.reason ?? opening.reason, up: writer.up, lastError: writer.lastError, spooled: spool.rows, spoolFailure: spool.failure }) });
  const configFile = opts.configFile === undefined ? {} : { configFile: opts.configFile };
  await app.register(liveRoutes, { live });
  await app.register(settingsRoutes, { config: holder, ...configFile });
  await app.register(statusRoutes, { config: holder, version: TOLLGATE_VERSION, instanceId, ...configFile });
  await app.register(consoleRoutes, { version: TOLLGATE_VERSION, keysRequired: () => holder.current.server.api_keys.length > 0 });
  await app.register(catalogRoutes, { config: holder });
  await app.register(providerConnectRoutes, { config: holder });
  await app.register(providerRoutes, { config: holder });
  await app.register(adminRoutes, { store, config: holder, writer, ...(opts.configFile === undefined ? {} : { configFile: opts.configFile }) });
  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  // Listening comes first: the store opens right after, or at its first use when the app is only injected into.
  // The embedded engine's load blocks the event loop for about a quarter of a second, so on that path the opening
  // waits until the requests that came with the start are answered (QUIET_OPEN; a store read or the writer's first
  // insert starts it sooner). The server path's opening is network I/O: it starts at once.
  app.addHook('onListen', (done) => {
    idleGc.start();
    if (cfg.storage.clickhouse_url === '') opening.startWhenQuiet(() => ({ begun, inFlight: spool.inFlight }), QUIET_OPEN);
    else setImmediate(() => opening.start());
    done();
  });
  app.addHook('onClose', async () => {
    drain.end();
    idleGc.close();
    closed = true;
    // An opening still under way stops retrying. The store steps get what is left of the stop's bound (a hanging store
    // held it for minutes; unstored rows stay on disk), the writer STORE_STEPS_MS at least, after a slow webhook too.
    const left = drain.remaining(holder.current.server.shutdown_timeout_s, STORE_STEPS_MS);
    await opening.close();
    await within(storeReady.catch(() => undefined), left());
    // Before the dispatcher and the writer: a ping in flight needs the one and records into the other.
    await keepalive.close();
    // The requests the drain let end (or cut at its deadline) publish their records after their connections closed:
    // waited for, a few seconds at most, or one would be left as its begin marker and replayed as `interrupted`.
    for (const until = performance.now() + RECORDS_WAIT_MS; spool.inFlight > 0 && performance.now() < until;) await sleep(10);
    await within(alerting.close(), left());
    await dispatcher.close();
    try {
      await writer.close(Math.max(STORE_STEPS_MS, left())).finally(logDropped.flush);
    } finally {
      releaseSpool(); // the spool is closed: another process may take the directory
    }
    await store.close();
  });
  return app;
}
