#!/usr/bin/env node
// The process: parse the command line, load the config, start telemetry, build the app, listen, handle signals.
//
//   tollgate [--config FILE]        serve FILE (default: $TOLLGATE_CONFIG or ./config.yaml)
//   tollgate check-config [FILE]    validate FILE and exit 0 (valid) or 1 (invalid)
//   tollgate connect PROVIDER       OAuth sign-in for PROVIDER (device code or PKCE); tokens stored under storage.data_dir
//   tollgate providers add ID      a provider block from the model catalog, written into FILE (comments kept)
//   tollgate export [--out FILE]    the running gateway's store and config to one .tar.gz (re-authenticates first)
//   tollgate import FILE            such an archive into the running gateway's store, without duplicating rows

import { statSync } from 'node:fs';
import { ConfigError, parseConfigText, parseServerAddress, readConfigText } from './config/load.js';
import { ConfigHolder, reloadConfigFile, watchConfigFile } from './config/watch.js';
import { SPANS_AT_STOP_MS, startTelemetry } from './telemetry/otel.js';

const USAGE = `usage: tollgate [--config FILE]
       tollgate check-config [FILE]
       tollgate connect PROVIDER [--config FILE]
       tollgate providers add CATALOG_ID [--as PREFIX] [--model MODEL]... [--group GROUP] [--base-url URL] [--config FILE]
       tollgate export [--out FILE] [--url URL] [--key KEY] [--config FILE]
       tollgate import ARCHIVE [--url URL] [--key KEY] [--config FILE]

Serves the gateway described by FILE (default: $TOLLGATE_CONFIG, else ./config.yaml).
check-config validates FILE without starting and exits non-zero when it is invalid.
connect signs in to PROVIDER (auth.type: oauth) with its auth.oauth.flow (device_code, or pkce: a browser sign-in
that comes back to 127.0.0.1, or whose address is pasted back) and stores its tokens, encrypted, under
storage.data_dir.
providers add writes a provider block for CATALOG_ID (a provider of the model catalog: GET /api/catalog/providers)
into FILE, with the models named by --model (default: all the catalog has for it), comments and layout kept.
export and import talk to the running gateway at URL (default: server.host and server.port of FILE, the only
settings of FILE they read, so only their \${VAR}s need be set): they re-authenticate with the admin KEY (default: $TOLLGATE_API_KEY; none when the gateway has no keys), then export
every table and the config (secrets as \${VAR} references) to one .tar.gz, or import such an archive, adding only
rows the store does not hold yet.`;

interface Args {
  command: 'serve' | 'check-config' | 'connect' | 'providers-add' | 'export' | 'import' | 'help';
  /** providers add: what to add. */
  add?: { catalogId: string; prefix?: string; models: string[]; group?: 'paid' | 'subscription' | 'free'; baseUrl?: string };
  file: string;
  /** connect: the provider id. */
  provider?: string;
  /** export: where to write the archive. */
  out?: string;
  /** import: the archive to read. */
  archive?: string;
  /** export, import: the gateway's base URL (default: from the config). */
  url?: string;
  /** export, import: the admin key. */
  key?: string;
}

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Args {
  let command: Args['command'] = 'serve';
  let file: string | undefined;
  let provider: string | undefined;
  const opts: { out?: string; url?: string; key?: string; archive?: string } = {};
  let add: NonNullable<Args['add']> | undefined;
  const remote = () => command === 'export' || command === 'import';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const [flag, inline] = a.startsWith('--') && eq !== -1 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new Error(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    if (a === '--help' || a === '-h') command = 'help';
    else if (flag === '--config' || flag === '-c') file = value();
    else if (a === 'check-config' && i === 0) command = 'check-config';
    else if (a === 'connect' && i === 0) command = 'connect';
    else if (a === 'providers' && i === 0 && argv[1] === 'add') {
      command = 'providers-add';
      i++;
    } else if (command === 'providers-add' && add === undefined && !a.startsWith('-')) add = { catalogId: a, models: [] };
    else if (command === 'providers-add' && add !== undefined && flag === '--model') add.models.push(value());
    else if (command === 'providers-add' && add !== undefined && flag === '--as') add.prefix = value();
    else if (command === 'providers-add' && add !== undefined && flag === '--base-url') add.baseUrl = value();
    else if (command === 'providers-add' && add !== undefined && flag === '--group') {
      const g = value();
      if (g !== 'paid' && g !== 'subscription' && g !== 'free') throw new Error(`--group must be paid, subscription or free\n${USAGE}`);
      add.group = g;
    }
    else if ((a === 'export' || a === 'import') && i === 0) command = a;
    else if (remote() && flag === '--url') opts.url = value();
    else if (remote() && flag === '--key') opts.key = value();
    else if (command === 'export' && (flag === '--out' || flag === '-o')) opts.out = value();
    else if (command === 'import' && opts.archive === undefined && !a.startsWith('-')) opts.archive = a;
    else if (command === 'check-config' && file === undefined) file = a;
    else if (command === 'connect' && provider === undefined && !a.startsWith('-')) provider = a;
    else throw new Error(`unknown argument '${a}'\n${USAGE}`);
  }
  if (command === 'connect' && provider === undefined) throw new Error(`connect needs a PROVIDER\n${USAGE}`);
  if (command === 'providers-add' && add === undefined) throw new Error(`providers add needs a CATALOG_ID\n${USAGE}`);
  if (command === 'import' && opts.archive === undefined) throw new Error(`import needs an ARCHIVE (a .tar.gz from tollgate export)\n${USAGE}`);
  const key = opts.key ?? (remote() && env.TOLLGATE_API_KEY ? env.TOLLGATE_API_KEY : undefined);
  return {
    command,
    file: file ?? (env.TOLLGATE_CONFIG || undefined) ?? './config.yaml', // empty is unset, as PORT
    ...(provider === undefined ? {} : { provider }),
    ...(add === undefined ? {} : { add }),
    ...(opts.out === undefined ? {} : { out: opts.out }),
    ...(opts.archive === undefined ? {} : { archive: opts.archive }),
    ...(opts.url === undefined ? {} : { url: opts.url }),
    ...(key === undefined ? {} : { key }),
  };
}

/** export or import against the gateway at `url`. */
async function remote(args: Args, url: string): Promise<void> {
  const { exportArchive, importArchive } = await import('./cli/archive.js');
  const target = { url, ...(args.key === undefined ? {} : { key: args.key }) };
  if (args.command === 'export') await exportArchive(target, args.out === undefined ? {} : { out: args.out }, process.stdout);
  else await importArchive(target, args.archive!, process.stdout);
}

function fail(err: unknown): never {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}

/** What `load` returns; a ConfigError (the file cannot be read, or is not a valid config) ends the process saying why. */
function loading<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    if (err instanceof ConfigError) fail(err);
    throw err;
  }
}

async function main(): Promise<void> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    fail(err);
  }
  if (args.command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (args.command === 'export' || args.command === 'import') {
    // A client of the running gateway: with --url the config file is not read; without, only the address it gives
    // (server.host, server.port), so that only their ${VAR}s need be set (not the provider keys a start needs).
    const { gatewayUrl } = await import('./cli/archive.js');
    const url = args.url ?? gatewayUrl(loading(() => parseServerAddress(readConfigText(args.file), process.env, args.file)));
    await remote(args, url).catch(fail);
    return;
  }
  if (args.command === 'providers-add') {
    // the file is edited, not served: it may not even be valid yet without the provider
    const { addProviderToFile } = await import('./cli/providers.js');
    const a = args.add!;
    await addProviderToFile(args.file, {
      catalogId: a.catalogId, ...(a.models.length > 0 ? { models: a.models } : {}), ...(a.prefix === undefined ? {} : { prefix: a.prefix }),
      ...(a.group === undefined ? {} : { group: a.group }), ...(a.baseUrl === undefined ? {} : { baseUrl: a.baseUrl }),
    }, process.stdout).catch(fail);
    return;
  }
  // taken before reading, so that an edit made while the app starts is seen by the watcher
  const loadedStat = statSync(args.file, { throwIfNoEntry: false });
  const fileText = loading(() => readConfigText(args.file));
  const config = loading(() => parseConfigText(fileText, process.env, args.file));
  if (args.command === 'check-config') {
    const { pricingWarnings } = await import('./config/pricing.js');
    for (const w of pricingWarnings(config)) process.stderr.write(`warning: ${w.path}: ${w.message}\n`);
    process.stdout.write(`${args.file}: ok (${Object.keys(config.providers).length} providers)\n`);
    return;
  }
  if (args.command === 'connect') {
    // no telemetry, no store, no server: only the authorization server and data_dir/credentials are touched
    const { connect } = await import('./cli/connect.js');
    await connect(config, args.provider!, process.stdout).catch(fail);
    return;
  }

  const telemetry = await startTelemetry(config);
  const { build } = await import('./app.js');
  const holder = new ConfigHolder(config, { fileText });
  const app = await build({ config: holder, configFile: args.file }).catch(fail);
  const rejected = () => app.tollgate.metrics.configReloads.inc({ result: 'rejected' });
  const stopWatching = watchConfigFile(args.file, holder, app.log, rejected, 500, loadedStat);
  try {
    await app.listen({ host: config.server.host, port: config.server.port });
  } catch (err) {
    app.log.error({ err }, 'cannot listen');
    // one line on stderr as every other failed start says it (the log line above goes to stdout)
    const why = (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'address already in use' : (err as Error).message.split('\n')[0];
    process.stderr.write(`cannot listen on ${config.server.host}:${config.server.port}: ${why}\n`);
    await app.close();
    process.exit(1);
  }

  let stopping = false;
  // The store opens in the background; one that can never open (refused credentials) stops the process.
  app.tollgate.storeReady.catch(async (err: unknown) => {
    if (stopping) return;
    stopping = true;
    stopWatching();
    await app.close().catch(() => undefined);
    await telemetry.shutdown(SPANS_AT_STOP_MS);
    process.stderr.write(`cannot open the store: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}\n`);
    process.exit(1);
  });
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: draining requests and usage rows');
    const startedAt = Date.now();
    stopWatching();
    await app.close();
    // Spans get what is left of the stop's bound, at least SPANS_AT_STOP_MS; with no bound (0), what they take.
    const boundMs = holder.current.server.shutdown_timeout_s * 1000;
    await telemetry.shutdown(boundMs === 0 ? undefined : Math.max(SPANS_AT_STOP_MS, boundMs - (Date.now() - startedAt)));
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // As nginx and Prometheus take it: read the config file now (it is also watched). Without a handler a SIGHUP (a
  // closed terminal, an operator expecting a reload) killed the process with no drain, as kill -9 would.
  process.on('SIGHUP', () => {
    if (stopping) return;
    app.log.info({ signal: 'SIGHUP', file: args.file }, 're-reading the config file');
    reloadConfigFile(args.file, holder, app.log, rejected);
  });
}

await main();
