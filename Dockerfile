# The gateway image for docker-compose.yml: built in one stage, run in another, as the unprivileged `node` user,
# without the embedded ClickHouse engine (chdb is an optional dependency, left out): the image talks to the
# ClickHouse server named by storage.clickhouse_url.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Every dependency, chdb's types included, to compile; no install scripts are needed.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
# What `npm run build` reads besides src/: its scripts (the generated modules, the console bundle) and the console.
COPY scripts ./scripts
COPY console ./console
COPY src ./src
RUN npm run build && npm prune --omit=dev --omit=optional --ignore-scripts

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# package.json (the version) and CHANGELOG.md (the release notes of /api/version) are read beside dist/.
COPY --chown=node:node package.json CHANGELOG.md config.yaml ./
USER node
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:4000/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/main.js"]
CMD ["--config", "/etc/tollgate/config.yaml"]
