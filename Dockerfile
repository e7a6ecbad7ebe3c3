# The gateway image used by docker-compose.yml.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev
COPY config.yaml ./
ENV NODE_ENV=production
EXPOSE 4000
ENTRYPOINT ["node", "dist/main.js"]
