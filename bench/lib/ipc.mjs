// A tiny request/response protocol over the IPC channel of child_process.fork, plus the bookkeeping that makes
// sure no child outlives the benchmark: every forked child is SIGKILLed when the parent exits for any reason,
// and a child exits by itself when its parent goes away (the IPC channel disconnects).

import { fork } from 'node:child_process';

// ---------------------------------------------------------------------------------------------------------------
// Parent side

const live = new Set();

/** SIGKILL every child still running. Safe to call more than once; used on every exit path. */
export function killAll() {
  for (const c of live) {
    try {
      c.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

process.on('exit', killAll);

/**
 * Fork `script` as a named child. Resolves `ready` with the child's `{ ready: true, ... }` message.
 * `request(cmd, arg)` sends a command and resolves with the child's answer; `stop()` asks the child to close
 * cleanly and SIGKILLs it if it does not exit in time.
 */
export function startChild(name, script, args = [], { execArgv = [], cwd = undefined, readyTimeoutMs = 60_000 } = {}) {
  const child = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv, cwd });
  live.add(child);
  const pending = new Map();
  let nextId = 1;
  let stopping = false;
  let exitInfo = null;
  let resolveReady;
  let rejectReady;
  const ready = new Promise((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => undefined);
  const readyTimer = setTimeout(() => rejectReady(new Error(`${name}: not ready after ${readyTimeoutMs} ms`)), readyTimeoutMs);
  const exited = new Promise((res) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      exitInfo = { code, signal };
      clearTimeout(readyTimer);
      const err = new Error(`${name} exited (${signal ?? `code ${code}`})`);
      rejectReady(err);
      for (const p of pending.values()) {
        clearTimeout(p.timer);
        p.reject(err);
      }
      pending.clear();
      res(exitInfo);
    });
  });
  child.on('error', (err) => rejectReady(err));
  child.on('message', (m) => {
    if (m && m.ready) {
      clearTimeout(readyTimer);
      resolveReady(m);
      return;
    }
    const p = m && pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.ok) p.resolve(m.result);
    else p.reject(new Error(`${name}: ${m.error}`));
  });

  const request = (cmd, arg, timeoutMs = 60_000) =>
    new Promise((resolve, reject) => {
      if (exitInfo) {
        reject(new Error(`${name} is not running (it exited: ${exitInfo.signal ?? `code ${exitInfo.code}`})`));
        return;
      }
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${name}: '${cmd}' got no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      child.send({ id, cmd, arg });
    });

  const stop = async (timeoutMs = 15_000) => {
    if (exitInfo) return exitInfo;
    stopping = true;
    await request('stop', undefined, timeoutMs).catch(() => undefined);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    const info = await exited;
    clearTimeout(timer);
    return info;
  };

  return {
    name,
    pid: child.pid,
    ready,
    exited,
    request,
    stop,
    /** True when the child exited without being asked to. */
    get crashed() {
      return exitInfo !== null && !stopping;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Child side

/**
 * Answer the parent's commands with `handlers[cmd](arg)`. The `stop` handler runs, its answer is sent, then the
 * process exits (normally, so `--cpu-prof` profiles get written). A lost parent ends the process too.
 */
export function serveParent(handlers) {
  if (typeof process.send !== 'function') throw new Error('this script is started by bench/run.mjs (needs an IPC channel)');
  process.on('disconnect', () => process.exit(1));
  process.on('message', async (m) => {
    if (!m || typeof m.id !== 'number') return;
    let reply;
    try {
      const h = handlers[m.cmd];
      if (!h) throw new Error(`unknown command '${m.cmd}'`);
      reply = { id: m.id, ok: true, result: (await h(m.arg)) ?? null };
    } catch (err) {
      reply = { id: m.id, ok: false, error: String(err?.stack ?? err) };
    }
    if (m.cmd === 'stop') process.send(reply, () => process.exit(0));
    else process.send(reply);
  });
}

/** Tell the parent the child is serving. */
export function announceReady(info) {
  process.send({ ready: true, ...info });
}

/** CPU time this process has used, in microseconds (user + system, all threads). */
export function cpuMicros() {
  const u = process.cpuUsage();
  return u.user + u.system;
}
