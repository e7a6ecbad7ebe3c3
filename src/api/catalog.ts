// GET /api/catalog: the models the catalog knows (config/catalog.ts), then those of each catalog provider it lacks that
// the second price source names (config/source-models.ts, each with `price_source` and `limits_source`), filterable,
// each with the configured `<provider>/<model>` names it prices; GET /api/catalog/providers: its providers, with the wire format and base URL
// `tollgate providers add` would write. Read-only data shipped in an npm package: nothing is fetched. The package is
// loaded by the first request here, not at start (config/catalog-prices.ts).

import type { FastifyPluginAsync } from 'fastify';
import type { ConfigHolder } from '../config/watch.js';
import type { Capability, Config } from '../config/types.js';
import type { CatalogModel } from '../config/catalog.js';
import type { SourceModel } from '../config/source-models.js';
import { CATALOG_PACKAGE, CATALOG_VERSION } from '../config/catalog-prices.js';
import { QueryReader, invalid } from './analytics/params.js';

const CAPABILITIES: readonly Capability[] = ['vision', 'pdf', 'audio', 'tools', 'reasoning', 'structured_output'];

/** `<catalog provider>/<model id>` -> the configured `<prefix>/<model>` names priced from it. */
function configuredNames(cfg: Config): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [pid, p] of Object.entries(cfg.providers)) {
    if (!p.catalog) continue;
    for (const mid of Object.keys(p.models)) {
      const key = `${p.catalog}/${mid}`;
      out.set(key, [...(out.get(key) ?? []), `${pid}/${mid}`]);
    }
  }
  return out;
}

/** A model as listed; `sourced` is set for one the catalog lacks (config/source-models.ts). */
function view(m: CatalogModel, configured: readonly string[], sourced: SourceModel | null) {
  return {
    provider: m.provider,
    id: m.id,
    name: m.name,
    price: m.price,
    context_tokens: m.contextTokens,
    max_output_tokens: m.maxOutputTokens,
    capabilities: m.capabilities,
    release_date: m.releaseDate,
    configured,
    // A model the catalog lacks says where its price and limits came from; the catalog's own entries are as they were.
    ...(sourced !== null ? { price_source: sourced.priceSource, limits_source: sourced.limitsSource } : {}),
  };
}

export const catalogRoutes: FastifyPluginAsync<{ config: ConfigHolder }> = async (app, { config }) => {
  const source = { package: CATALOG_PACKAGE, version: CATALOG_VERSION };

  app.get('/api/catalog', async (req) => {
    const { catalogModels, catalogProviders } = await import('../config/catalog.js');
    const { isSourceModel, sourceModels } = await import('../config/source-models.js');
    const q = new QueryReader(req.query, ['provider', 'q', 'capability', 'configured', 'priced', 'limit', 'offset']);
    const provider = q.string('provider', 100);
    const text = q.string('q', 100)?.toLowerCase();
    const capability = q.oneOf('capability', CAPABILITIES);
    const configuredOnly = q.bool('configured');
    const pricedOnly = q.bool('priced');
    const limit = q.int('limit', 1, 1000) ?? 100;
    const offset = q.int('offset', 0, 1_000_000) ?? 0;
    const providers = provider === undefined ? catalogProviders().map((p) => p.id) : [provider];
    if (provider !== undefined && catalogProviders().every((p) => p.id !== provider)) {
      throw invalid('provider', `the catalog has no provider '${provider}'; GET /api/catalog/providers lists them`);
    }
    const names = configuredNames(config.current);
    const matches = providers
      .flatMap((pid) => [...catalogModels(pid), ...sourceModels(pid)])
      .filter((m) => text === undefined || m.id.toLowerCase().includes(text) || m.name.toLowerCase().includes(text))
      .filter((m) => capability === undefined || m.capabilities.includes(capability))
      .filter((m) => !pricedOnly || m.price !== null)
      .map((m) => view(m, names.get(`${m.provider}/${m.id}`) ?? [], isSourceModel(m) ? m : null))
      .filter((m) => !configuredOnly || m.configured.length > 0);
    return { catalog: source, total: matches.length, limit, offset, models: matches.slice(offset, offset + limit) };
  });

  app.get('/api/catalog/providers', async () => {
    const { catalogModels, catalogProviders } = await import('../config/catalog.js');
    return {
      catalog: source,
      providers: catalogProviders().map((p) => ({
        id: p.id, name: p.name, format: p.format, base_url: p.baseUrl, env: p.env, doc: p.doc, models: catalogModels(p.id).length,
      })),
    };
  });
};
