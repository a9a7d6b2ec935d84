#!/bin/sh
# The one recipe that lays out the image's /app: the Dockerfile's build stage and the local image
# build (src/infra/project-image.ts) both run these phases, so the two images cannot drift.
# Run in a copy of the repository holding package.json, package-lock.json, .npmrc, tsconfig*.json,
# src/ and bin/, with Node 24's node and npm on PATH:
#   app.sh deps         exactly the lock file's dependencies (as .ci/run installs them)
#   app.sh build        compile, copy the protos, pre-bundle the workflows
#   app.sh stage DIR    drop dev dependencies and copy what the image runs into DIR (its /app)
set -eu

case "${1:-}" in
deps)
  npm ci --no-audit --no-fund
  ;;
build)
  npm run build
  # tsc copies no .proto: the fast path loads its service definitions from next to the code.
  mkdir -p dist/api
  rm -rf dist/api/proto
  cp -r src/api/proto dist/api/proto
  # Bundle the workflows once, at build time: the worker then loads this file (DO_WORKFLOW_BUNDLE)
  # instead of running webpack at every start-up; the fast path its own, with the sandbox
  # workflows only (DO_FASTPATH_WORKFLOW_BUNDLE).
  node --input-type=module -e "import('./dist/workers/bundle.js').then((m) => m.writeWorkflowBundle('dist/workflow-bundle.js'))"
  node --input-type=module -e "import('./dist/workers/bundle.js').then((m) => m.writeWorkflowBundle('dist/sandbox-workflow-bundle.js', 'sandbox'))"
  test -s dist/workflow-bundle.js
  test -s dist/sandbox-workflow-bundle.js
  ;;
stage)
  out=${2:?usage: app.sh stage DIR}
  npm prune --omit=dev --no-audit --no-fund
  mkdir -p "$out"
  cp -a package.json node_modules dist bin "$out"/
  ;;
*)
  echo "usage: app.sh deps | build | stage DIR" >&2
  exit 2
  ;;
esac
