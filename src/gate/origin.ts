// What a web page can make a browser send here, refused before any key is looked at (docs/security.md, "Browsers"):
//
//   - With no server.api_keys (open mode, loopback only) a request addressed to any name but a loopback one. A page
//     on attacker.example can rebind that name to 127.0.0.1 (DNS rebinding); its requests then come from the user's
//     own machine and are same-origin to the browser, so only the Host header tells them apart. As Jupyter's and
//     Vite's allowed-hosts checks: localhost, *.localhost, 127.0.0.0/8 and [::1], with or without a port.
//   - On every route, keys or not, a state-changing request (not GET, HEAD or OPTIONS) that a browser marks as coming
//     from another origin: `Sec-Fetch-Site` other than same-origin or none, or, from a browser too old to send that,
//     an `Origin` whose host is not the request's. A bodyless or form POST is a CORS "simple" request: a page on any
//     site can send one without a preflight. The same algorithm as Go's net/http CrossOriginProtection.
//
// SDKs, CLIs and curl send neither Origin nor Sec-Fetch-Site and are never refused here. With keys, the check of
// their requests is the method, then (a write) two header lookups: no regular expression, no allocation. Without keys
// the Host is also split from its port and compared (a loopback gateway, not the path that is measured).

import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { TollgateError } from '../core/errors.js';

/** How much of a client-sent name is quoted back in a refusal. */
const QUOTED = 100;

/**
 * Whether `host` (a Host header: a name or an address, optionally `:port`) names the loopback interface:
 * `localhost` and any `*.localhost` (RFC 6761: never resolved through DNS), an IPv4 address in 127.0.0.0/8, `[::1]`.
 */
export function isLoopbackHost(host: string): boolean {
  let name: string;
  let port: string; // what follows the name: '' or ':<port>'
  if (host.charCodeAt(0) === 0x5b /* [ */) {
    const end = host.indexOf(']');
    name = host.slice(0, end + 1);
    port = host.slice(end + 1);
    if (end === -1 || name !== '[::1]') return false;
  } else {
    const colon = host.indexOf(':');
    name = colon === -1 ? host : host.slice(0, colon);
    port = colon === -1 ? '' : host.slice(colon);
    if (!isLoopbackName(name.toLowerCase())) return false;
  }
  return port === '' || (port.charCodeAt(0) === 0x3a /* : */ && isPort(port.slice(1)));
}

function isLoopbackName(name: string): boolean {
  if (name === 'localhost') return true;
  if (name.endsWith('.localhost')) return name.length > '.localhost'.length && name.charCodeAt(0) !== 0x2e /* . */;
  return name.startsWith('127.') && isIP(name) === 4;
}

/** 1 to 5 decimal digits (the port of a Host header; its value is not checked, a browser sends a real one). */
function isPort(s: string): boolean {
  if (s.length === 0 || s.length > 5) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** The host part of a serialized origin (`https://a.example:8443` -> `a.example:8443`); '' for `null` or junk. */
function originHost(origin: string): string {
  const at = origin.indexOf('://');
  return at === -1 ? '' : origin.slice(at + 3);
}

const quote = (s: string): string => (s.length > QUOTED ? `${s.slice(0, QUOTED)}...` : s);

/** The last Host found to be a loopback name. */
let lastLoopback = '';

/**
 * Why the gate refuses `req` as something a web page made a browser send (a 403), or null to go on to the keys.
 * `open`: no server.api_keys are configured. The Host is fastify's `req.host`: a trusted proxy's X-Forwarded-Host
 * (server.trust_proxy), else the Host header.
 */
export function browserRefusal(req: FastifyRequest, open: boolean): TollgateError | null {
  if (open) {
    const host = req.host;
    // No Host at all (HTTP/1.0): not a browser, which always sends one. The last loopback name seen is remembered: a
    // client sends the same one on every request (`bench/ab.mjs` put the check at about 1.8 % of a request's CPU).
    if (host !== lastLoopback && host !== '') {
      if (isLoopbackHost(host)) lastLoopback = host;
      else {
        return new TollgateError(
          'TOLLGATE_ERR_FORBIDDEN',
          `Host '${quote(host)}' is not a loopback name: with no server.api_keys the gateway answers only requests addressed to localhost, 127.0.0.1 or [::1] (a web page under another name can reach it by DNS rebinding); open it as http://localhost:<port>, or configure server.api_keys to serve it under another name (a tunnel, a proxy)`,
        );
      }
    }
  }
  const method = req.method;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return null;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return null;
    return new TollgateError('TOLLGATE_ERR_FORBIDDEN', `a ${method} from a web page on another origin (Sec-Fetch-Site: ${quote(site)}) is refused: only the console, on the gateway's own origin, may change anything from a browser`);
  }
  const origin = req.headers.origin;
  if (origin === undefined || originHost(origin) === req.host) return null;
  return new TollgateError('TOLLGATE_ERR_FORBIDDEN', `a ${method} from a web page on another origin (Origin ${quote(origin)}, Host ${quote(req.host)}) is refused: only the console, on the gateway's own origin, may change anything from a browser`);
}
