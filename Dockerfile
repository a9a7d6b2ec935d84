# syntax=docker/dockerfile:1
# One image for every role: `worker`, `watcher` (and the other CLI commands).
#   docker build -t durable-operators .
#   docker run --rm durable-operators --help
# The same image is built without Docker by `npm run cli -- image build` (src/infra/project-image.ts):
# both paths lay out /app with one recipe (scripts/image/app.sh) and install one Debian package
# list (scripts/image/runtime-packages); test/unit/image-contents.test.ts holds this file's config
# (env, user, workdir, entrypoint) and the local build's to each other.

# ---- sandbox-init: PID 1 of every sandbox container (static Go, bind-mounted into them) -----
# ---- and sandbox-netd: the agent's helper that wires the sandboxes' network namespaces -------
FROM golang:1.22 AS sandbox-init
WORKDIR /build
COPY src ./src
RUN cd src/agent/init && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /sandbox-init .
RUN cd src/agent/netd && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /sandbox-netd .

# ---- build: compile TypeScript, pre-bundle the workflow code, drop dev dependencies ----------
FROM node:24-bookworm-slim AS build
WORKDIR /build
COPY scripts/image/app.sh /usr/local/bin/app-recipe
COPY package.json package-lock.json .npmrc ./
RUN app-recipe deps
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
RUN app-recipe build
RUN app-recipe stage /app

# ---- runtime ---------------------------------------------------------------------------------
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    DO_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js \
    DO_FASTPATH_WORKFLOW_BUNDLE=/app/dist/sandbox-workflow-bundle.js \
    DO_SANDBOX_INIT=/usr/local/bin/sandbox-init \
    DO_SANDBOX_NETD=/usr/local/bin/sandbox-netd
WORKDIR /app
# The agent's tools (iproute2, nftables, the CNI plugins): the list the local build installs too.
COPY scripts/image/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && apt-get install -y --no-install-recommends $(grep -v '^#' /tmp/runtime-packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=sandbox-init /sandbox-init /usr/local/bin/sandbox-init
COPY --from=sandbox-init /sandbox-netd /usr/local/bin/sandbox-netd
COPY --from=build /app /app
# The image's `node` user, by number so Kubernetes can verify runAsNonRoot.
USER 1000:1000
ENTRYPOINT ["node", "bin/durable-operators.js"]
CMD ["--help"]
