// The layering of src/ (docs/architecture.md): each folder imports only folders below it in LAYERS, never one above,
// and no import circle anywhere. `npm run lint:deps` checks it; .ci/run runs it.
/** @type {string[]} lowest first */
const LAYERS = ['core', 'config', 'ledger', 'wire', 'store', 'providers', 'telemetry', 'gate', 'routing', 'accounting', 'pipeline', 'services', 'alerts', 'api', 'cli'];

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `${layer}-imports-above`,
  comment: `src/${layer}/ may import only ${LAYERS.slice(0, i).join(', ') || 'nothing of src/'} (and itself)`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: `^src/(${LAYERS.slice(i + 1).join('|')})/|^src/(app|main)\\.ts$` },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'an import circle', severity: 'error', from: {}, to: { circular: true } },
    ...upward,
    {
      name: 'only-app-builds',
      comment: 'app.ts builds the app in dependency order; only main.ts (and tests) import it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/main\\.ts$' },
      to: { path: '^src/app\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
