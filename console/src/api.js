// Every call the console makes goes through here: same origin only, the API key (if any) as a header, never in a URL.
// The key lives in sessionStorage: gone when the tab closes, never in local storage or a cookie.

const KEY_ITEM = 'tollgate.api_key';

export const session = {
  get key() {
    return sessionStorage.getItem(KEY_ITEM);
  },
  set key(value) {
    if (value === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, value);
  },
};

/** What the console says of an answer that is not the gateway's JSON (a proxy's login or error page, say). */
export const NOT_JSON = 'the gateway answered something that is not JSON: is a proxy in the way?';

/** An answer in the gateway's error shape (docs/errors.md), or one that is not JSON at all (`body` undefined). */
export class ApiError extends Error {
  constructor(status, body) {
    const e = body && body.error ? body.error : null;
    super(e ? e.message : body === undefined ? `HTTP ${status}: ${NOT_JSON}` : `HTTP ${status}`);
    this.status = status;
    this.code = e ? e.code : null;
    this.param = e ? e.param : null;
  }
}

/** A 2xx answer that is not the JSON the console asked for: an error to show, not data (the page would wait forever). */
export class NotJsonError extends Error {
  constructor(status) {
    super(NOT_JSON);
    this.status = status;
  }
}

/** The parsed body, or undefined when it is not JSON (an HTML page: ApiError and NotJsonError say so). */
function jsonOrUndefined(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The gateway could not be reached at all (fetch itself failed: the network, the gateway down, a refused connection). */
const unreachable = (err) => new Error(`the gateway did not answer (${err.message})`);

const listeners = new Set();
/** Called with the status when a call is refused for its key (401): the app shows the sign-in form. */
export function onUnauthorized(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function authHeaders(key = session.key) {
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** `fetch` of an /api path; JSON in and out; throws ApiError. `etag`: sent as If-Match. */
export async function api(path, opts = {}) {
  const headers = { accept: 'application/json', ...authHeaders(opts.key) };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.etag) headers['if-match'] = opts.etag;
  let res;
  try {
    res = await fetch(path, {
      method: opts.method ?? 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    throw opts.signal?.aborted ? err : unreachable(err);
  }
  const text = await res.text();
  const body = text === '' && res.status === 204 ? null : jsonOrUndefined(text);
  if (!res.ok) {
    const err = new ApiError(res.status, body);
    if (res.status === 401 && opts.key === undefined) for (const fn of listeners) fn(err);
    throw err;
  }
  if (body === undefined) throw new NotJsonError(res.status);
  return { body, etag: res.headers.get('etag') };
}

export const get = async (path, opts) => (await api(path, opts)).body;

/** What the console says of a live stream answered with something else (a proxy's page, a buffered answer). */
export const NOT_EVENTS = 'the gateway answered something that is not an event stream: is a proxy in the way?';

/**
 * Server-sent events over fetch (EventSource cannot send a header): calls `onEvent(name, data)` per event until
 * `signal` aborts; reconnects after a pause when the stream ends or fails. `onState(state, error)`: `open` once an
 * event stream answers, `retrying` (with the error) when it failed and is tried again.
 */
export async function streamEvents(path, { signal, onEvent, onState }) {
  while (!signal.aborted) {
    try {
      let res;
      try {
        res = await fetch(path, { headers: { accept: 'text/event-stream', ...authHeaders() }, signal, credentials: 'omit', cache: 'no-store' });
      } catch (err) {
        throw signal.aborted ? err : unreachable(err);
      }
      if (res.status === 401) {
        for (const fn of listeners) fn(new ApiError(401, null));
        return;
      }
      if (!res.ok) throw new ApiError(res.status, jsonOrUndefined(await res.text()));
      if (!res.body || !/^text\/event-stream\b/i.test(res.headers.get('content-type') ?? '')) {
        await res.body?.cancel();
        throw new Error(NOT_EVENTS);
      }
      onState?.('open', null);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let name = 'message';
          const data = [];
          for (const line of frame.split('\n')) {
            if (line.startsWith('event:')) name = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          if (data.length > 0) onEvent(name, JSON.parse(data.join('\n')));
        }
      }
      if (!signal.aborted) onState?.('retrying', null);
    } catch (err) {
      if (signal.aborted) return;
      onState?.('retrying', err instanceof SyntaxError ? new Error(NOT_EVENTS) : err);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
