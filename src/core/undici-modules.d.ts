// Types for the two undici modules src/core/undici.ts imports by path (the package types only its index).

declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const PoolModule: typeof Pool;
  export default PoolModule;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  const requestModule: (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
  export default requestModule;
}

declare module 'undici/lib/core/symbols.js' {
  const symbols: { readonly kBusy: symbol };
  export default symbols;
}
