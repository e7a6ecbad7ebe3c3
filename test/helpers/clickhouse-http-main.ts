// The child-process entry of the test ClickHouse server (clickhouse-http.ts): started by spawnClickHouseHttp() with
// its options as the first argument; reports its port, then runs the fault controls it is sent over IPC. It exits
// when told to close or when its parent goes away.

import { ClickHouseHttp, type ClickHouseHttpOptions } from './clickhouse-http.js';

const send = (m: unknown) => new Promise<void>((resolve) => (process.send ? process.send(m, undefined, undefined, () => resolve()) : resolve()));

const opts = JSON.parse(process.argv[2] ?? '{}') as ClickHouseHttpOptions;
const server = await ClickHouseHttp.start(opts);
const commands: Record<string, (...args: never[]) => Promise<unknown>> = {
  refuse: () => server.refuse(),
  restore: () => server.restore(),
  serve503: () => server.serve503(),
  hang: (o: Parameters<ClickHouseHttp['hang']>[0]) => server.hang(o),
  refuseInserts: (table?: string) => server.refuseInserts(table),
  healthy: () => server.healthy(),
  stats: () => server.stats(),
  close: () => server.close(),
};

process.on('message', (m: { id: number; cmd: string; args: never[] }) => {
  void (async () => {
    const run = commands[m.cmd];
    try {
      if (run === undefined) throw new Error(`unknown command ${m.cmd}`);
      const result = await run(...m.args);
      await send({ id: m.id, ok: true, result });
      if (m.cmd === 'close') process.exit(0);
    } catch (err) {
      await send({ id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) });
    }
  })();
});
process.on('disconnect', () => void server.close().finally(() => process.exit(0)));
await send({ ready: true, port: server.port });
