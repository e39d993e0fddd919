# dms as one container: the compiled service (dist/), the operator's console (console/dist) and the
# production dependencies, run by node as the unprivileged `node` user. Every setting comes from the
# environment (src/config); state that must outlive the container is in DMS_DATA_DIR (a volume) or,
# with DMS_DATABASE_URL, in PostgreSQL.
#
#   docker build -t dms .
#   docker run -p 8080:8080 -v dms-data:/var/lib/dms dms
#
# examples/cluster/docker-compose.yml runs three of these on one PostgreSQL and one Kafka.

# --- build: compile TypeScript and the console, then drop the dev dependencies ----------------------
FROM node:20-bookworm-slim AS build

# better-sqlite3 compiles from source when no prebuilt binary fits; node-gyp needs these.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# The dependencies first, in a layer of their own that a source change does not invalidate. Install
# scripts are skipped here (the `prepare` script builds the console, whose sources are not copied
# yet) and then run for the packages that need them: better-sqlite3's native module and esbuild's
# binary check. node-gyp takes the headers of the image's own Node instead of downloading them.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund \
  && npm_config_nodedir=/usr/local npm rebuild better-sqlite3 esbuild

COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts/build-console.ts ./scripts/build-console.ts
RUN npm run build:console \
  && npm run build \
  && npm prune --omit=dev --no-audit --no-fund

# --- runtime: only what `node dist/main.js` reads ---------------------------------------------------
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
  DMS_DATA_DIR=/var/lib/dms

WORKDIR /app

# package.json says "type": "module", without which node reads dist/*.js as CommonJS.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist

# The code stays root's (COPY's default owner) and read-only to the service; only the data dir is
# the node user's. A named volume mounted there starts with that owner, so the service can write.
RUN mkdir -p /var/lib/dms && chown node:node /var/lib/dms
VOLUME ["/var/lib/dms"]

USER node

# REST (DMS_HTTP_PORT), proxy control (DMS_PROXY_CONTROL_PORT), embedded MQTT broker (DMS_MQTT_PORT),
# proxy device listener (DMS_PROXY_DEVICE_PORT) and the proxy's client session ports (DMS_PROXY_PORTS):
# the defaults of src/config. Publish the session ports on the same host ports, since /proxy/on
# answers clients with the port the session listens on.
EXPOSE 8080 8081 1884 7000 40000-40999

# Liveness: /healthz answers once the service listens and its database answers a query. Slim images
# have no curl, so node's own fetch asks.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.DMS_HTTP_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node itself, not npm: SIGTERM from `docker stop` reaches the service, which closes cleanly.
CMD ["node", "dist/main.js"]
