// What runs, and how it is reached:
//
//   GET /api/version   the running version, its release notes from CHANGELOG.md (the version's section, else
//                      [Unreleased]), and whether the config file on disk is what runs (an edit not applied yet, or
//                      one the reload refused, shows here)
//   GET /api/tunnel    server.public_url (a tunnel or reverse proxy in front of this instance) and whether a request
//                      to <public_url>/health comes back to THIS process: every /health answer carries the instance id
//                      (x-tollgate-instance), a random id taken at start, and the check compares it.

import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { loadConfigFile } from '../config/load.js';
import type { ConfigHolder } from '../config/watch.js';
import { undici } from '../core/undici.js';

export const INSTANCE_HEADER = 'x-tollgate-instance';
/** How long a tunnel check waits for <public_url>/health. */
const TUNNEL_TIMEOUT_MS = 3000;
/** A check is reused for this long: the console polls, the public URL should not be hammered. */
const TUNNEL_CACHE_MS = 10_000;

export interface StatusOptions {
  readonly config: ConfigHolder;
  readonly configFile?: string;
  readonly version: string;
  readonly instanceId: string;
  /** CHANGELOG.md (default: the one shipped beside dist/). */
  readonly changelog?: string;
}

/** The `## [version]` section of a Keep a Changelog text, else `## [Unreleased]`, without its heading. */
export function releaseNotes(changelog: string, version: string): { section: string; released: boolean; notes: string } | null {
  const sections = changelog.split(/^## /m).slice(1);
  const find = (name: string) => sections.find((s) => s.startsWith(`[${name}]`));
  const own = find(version);
  const chosen = own ?? find('Unreleased');
  if (chosen === undefined) return null;
  const newline = chosen.indexOf('\n');
  return { section: chosen.slice(1, chosen.indexOf(']')), released: own !== undefined, notes: chosen.slice(newline + 1).trim() };
}

export type TunnelState = 'not_configured' | 'reaches_this_instance' | 'reaches_another_instance' | 'unreachable';

export interface TunnelStatus {
  readonly public_url: string | null;
  readonly state: TunnelState;
  readonly http_status: number | null;
  readonly latency_ms: number | null;
  readonly error: string | null;
  readonly checked_at: string;
}

async function checkTunnel(publicUrl: string, instanceId: string): Promise<TunnelStatus> {
  const started = Date.now();
  const at = new Date(started).toISOString();
  const url = `${publicUrl.replace(/\/+$/, '')}/health`;
  try {
    const { request } = await undici();
    const res = await request(url, { method: 'GET', headersTimeout: TUNNEL_TIMEOUT_MS, bodyTimeout: TUNNEL_TIMEOUT_MS, signal: AbortSignal.timeout(TUNNEL_TIMEOUT_MS) });
    await res.body.dump();
    const seen = res.headers[INSTANCE_HEADER];
    const state: TunnelState = seen === instanceId ? 'reaches_this_instance' : res.statusCode === 200 && seen !== undefined ? 'reaches_another_instance' : 'unreachable';
    const error = state === 'unreachable' ? `${url} answered ${res.statusCode} without this instance's ${INSTANCE_HEADER} header` : null;
    return { public_url: publicUrl, state, http_status: res.statusCode, latency_ms: Date.now() - started, error, checked_at: at };
  } catch (err) {
    return { public_url: publicUrl, state: 'unreachable', http_status: null, latency_ms: null, error: `${url}: ${(err as Error).message.split('\n')[0]!.slice(0, 200)}`, checked_at: at };
  }
}

export const statusRoutes: FastifyPluginAsync<StatusOptions> = async (app, opts) => {
  const { config, configFile, version, instanceId } = opts;
  const changelogFile = opts.changelog ?? new URL('../../CHANGELOG.md', import.meta.url);

  app.get('/api/version', async () => {
    let notes: ReturnType<typeof releaseNotes> = null;
    try {
      notes = releaseNotes(readFileSync(changelogFile, 'utf8'), version);
    } catch {
      notes = null;
    }
    let disk: { file: string; matches_running: boolean; error: string | null } | null = null;
    if (configFile !== undefined) {
      try {
        const onDisk = loadConfigFile(configFile);
        disk = { file: configFile, matches_running: JSON.stringify(onDisk) === JSON.stringify(config.current), error: null };
      } catch (err) {
        disk = { file: configFile, matches_running: false, error: (err as Error).message.split('\n').slice(0, 6).join('\n') };
      }
    }
    return { name: 'tollgate', version, instance_id: instanceId, node: process.version, release_notes: notes, config: disk };
  });

  let cached: { url: string; at: number; status: Promise<TunnelStatus> } | null = null;
  app.get('/api/tunnel', async () => {
    const url = config.current.server.public_url;
    if (url === '') return { public_url: null, state: 'not_configured', http_status: null, latency_ms: null, error: null, checked_at: new Date().toISOString() } satisfies TunnelStatus;
    const now = Date.now();
    if (cached === null || cached.url !== url || now - cached.at > TUNNEL_CACHE_MS) cached = { url, at: now, status: checkTunnel(url, instanceId) };
    return cached.status;
  });
};
