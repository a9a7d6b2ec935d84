# syntax=docker/dockerfile:1
# One image for every role: `worker`, `watcher` (and the other CLI commands).
#   docker build -t durable-operators .
#   docker run --rm durable-operators --help

# ---- sandbox-init: PID 1 of every sandbox container (static Go, bind-mounted into them) -----
FROM golang:1.22 AS sandbox-init
WORKDIR /build
COPY src ./src
RUN cd src/agent/init && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /sandbox-init .

# ---- build: compile TypeScript, pre-bundle the workflow code, drop dev dependencies ----------
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# Exactly the lock file (as .ci/run installs).
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
RUN npm run build
# tsc copies no .proto: the fast path loads its service definitions from next to the code.
RUN mkdir -p dist/api && cp -r src/api/proto dist/api/proto
# Bundle the workflows once, at build time: the worker then loads this file (DO_WORKFLOW_BUNDLE)
# instead of running webpack at every start-up; the fast path its own, with the sandbox
# workflows only (DO_FASTPATH_WORKFLOW_BUNDLE).
RUN node --input-type=module -e "import('./dist/workers/bundle.js').then((m) => m.writeWorkflowBundle('dist/workflow-bundle.js'))" \
 && node --input-type=module -e "import('./dist/workers/bundle.js').then((m) => m.writeWorkflowBundle('dist/sandbox-workflow-bundle.js', 'sandbox'))" \
 && test -s dist/workflow-bundle.js && test -s dist/sandbox-workflow-bundle.js
RUN npm prune --omit=dev --no-audit --no-fund

# ---- runtime ---------------------------------------------------------------------------------
FROM node:24-slim
ENV NODE_ENV=production \
    DO_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js \
    DO_FASTPATH_WORKFLOW_BUNDLE=/app/dist/sandbox-workflow-bundle.js \
    DO_SANDBOX_INIT=/usr/local/bin/sandbox-init
WORKDIR /app
# The agent wires each sandbox's network namespace: iproute2 (ip netns), the CNI plugins (ptp,
# host-local in /usr/lib/cni) and nftables (the egress policy and port forwards).
RUN apt-get update \
 && apt-get install -y --no-install-recommends iproute2 nftables containernetworking-plugins \
 && rm -rf /var/lib/apt/lists/*
COPY --from=sandbox-init /sandbox-init /usr/local/bin/sandbox-init
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# The image's `node` user, by number so Kubernetes can verify runAsNonRoot.
USER 1000:1000
ENTRYPOINT ["node", "bin/durable-operators.js"]
CMD ["--help"]
