// When the gateway (in this process) has an upstream's answer head: undici publishes `undici:request:headers` as the
// status and headers of a request arrive, before the caller's promise resolves. A test that must act once the upstream
// has answered (a client that leaves after the 2xx came, a fusion member cut after it) waits for this, not for a time.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';

const CHANNEL = 'undici:request:headers';

/**
 * Resolves with the status of the next answer head the gateway gets from the upstream at `baseUrl` (a fake's; only
 * the gateway calls it). Call it before the request is sent.
 */
export function upstreamAnswered(baseUrl: string): Promise<number> {
  const origin = new URL(baseUrl).origin;
  return new Promise((resolve) => {
    const onHeaders = (message: unknown): void => {
      const { request, response } = message as { request: { origin?: unknown }; response: { statusCode: number } };
      if (new URL(String(request.origin)).origin !== origin) return;
      unsubscribe(CHANNEL, onHeaders);
      resolve(response.statusCode);
    };
    subscribe(CHANNEL, onHeaders);
  });
}
