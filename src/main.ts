#!/usr/bin/env node
// The process: parse the command line, load the config, start telemetry, build the app, listen, handle signals.
//
//   tollgate [--config FILE]        serve FILE (default: $TOLLGATE_CONFIG or ./config.yaml)
//   tollgate check-config [FILE]    validate FILE and exit 0 (valid) or 1 (invalid)
//   tollgate connect PROVIDER       OAuth device-code sign-in for PROVIDER; tokens stored under storage.data_dir

import { statSync } from 'node:fs';
import { ConfigError, loadConfigFile } from './config/load.js';
import { ConfigHolder, watchConfigFile } from './config/watch.js';
import { startTelemetry } from './telemetry/otel.js';

const USAGE = `usage: tollgate [--config FILE]
       tollgate check-config [FILE]
       tollgate connect PROVIDER [--config FILE]

Serves the gateway described by FILE (default: $TOLLGATE_CONFIG, else ./config.yaml).
check-config validates FILE without starting and exits non-zero when it is invalid.
connect signs in to PROVIDER (auth.type: oauth) with the OAuth device-code flow and stores its tokens, encrypted,
under storage.data_dir.`;

interface Args {
  command: 'serve' | 'check-config' | 'connect' | 'help';
  file: string;
  /** connect: the provider id. */
  provider?: string;
}

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Args {
  let command: Args['command'] = 'serve';
  let file: string | undefined;
  let provider: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') command = 'help';
    else if (a === '--config' || a === '-c') file = argv[++i];
    else if (a.startsWith('--config=')) file = a.slice('--config='.length);
    else if (a === 'check-config' && i === 0) command = 'check-config';
    else if (a === 'connect' && i === 0) command = 'connect';
    else if (command === 'check-config' && file === undefined) file = a;
    else if (command === 'connect' && provider === undefined && !a.startsWith('-')) provider = a;
    else throw new Error(`unknown argument '${a}'\n${USAGE}`);
  }
  if (command === 'connect' && provider === undefined) throw new Error(`connect needs a PROVIDER\n${USAGE}`);
  return { command, file: file ?? env.TOLLGATE_CONFIG ?? './config.yaml', ...(provider === undefined ? {} : { provider }) };
}

function fail(err: unknown): never {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
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
  let config;
  // taken before reading, so that an edit made while the app starts is seen by the watcher
  const loadedStat = statSync(args.file, { throwIfNoEntry: false });
  try {
    config = loadConfigFile(args.file);
  } catch (err) {
    if (err instanceof ConfigError) fail(err);
    throw err;
  }
  if (args.command === 'check-config') {
    process.stdout.write(`${args.file}: ok (${Object.keys(config.providers).length} providers)\n`);
    return;
  }
  if (args.command === 'connect') {
    // no telemetry, no store, no server: only the authorization server and data_dir/credentials are touched
    const { connect } = await import('./cli/connect.js');
    await connect(config, args.provider!, process.stdout).catch(fail);
    return;
  }

  const telemetry = startTelemetry(config);
  const { build } = await import('./app.js');
  const holder = new ConfigHolder(config);
  const app = await build({ config: holder, configFile: args.file }).catch(fail);
  const stopWatching = watchConfigFile(
    args.file, holder, app.log, () => app.tollgate.metrics.configReloads.inc({ result: 'rejected' }), 500, loadedStat,
  );
  try {
    await app.listen({ host: config.server.host, port: config.server.port });
  } catch (err) {
    app.log.error({ err }, 'cannot listen');
    await app.close();
    process.exit(1);
  }

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: draining requests and usage rows');
    stopWatching();
    await app.close();
    await telemetry.shutdown().catch(() => undefined);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

await main();
