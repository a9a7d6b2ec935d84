import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

/**
 * The integration tests are two projects, each with its own real stack (etcd, kube-apiserver,
 * controller-manager, Temporal, containerd) and its files one at a time. `npm test` runs the
 * projects as three vitest processes side by side (vitest itself puts every one-worker project
 * into one sequential queue): most of a test's time is waiting (timers, debounces, the
 * apiserver), so two stacks on this 2-core machine nearly halve the run. `runtime` holds what starts
 * processes, containers or whole stacks (sandboxes, agents, dev, deploy, the chart, the image); `integration`
 * everything else (requests, tenancy, Cloudflare). A file belongs to exactly one.
 */
const RUNTIME = [
  'test/integration/sandbox-*.test.ts',
  'test/integration/agent-*.test.ts',
  'test/integration/containerd-*.test.ts',
  'test/integration/dev*.test.ts',
  'test/integration/stack-*.test.ts',
  'test/integration/deploy*.test.ts',
  'test/integration/helm-*.test.ts',
  'test/integration/worker-*.test.ts',
  'test/integration/probes.test.ts',
];

function integration(
  name: string,
  include: string[],
  exclude: string[] = [],
  globalSetup = 'test/support/global-setup.ts',
): TestProjectInlineConfiguration {
  return {
    test: {
      name,
      include,
      exclude,
      // One real stack per project for its whole run (state under .state/test/<name>).
      globalSetup: [globalSetup],
      // A killed run takes its test files' processes along (the stack goes with its lifeline).
      setupFiles: ['test/support/exit-with-runner.ts'],
      // Files share their project's stack: one at a time within a project.
      fileParallelism: false,
      pool: 'forks',
      // Hang protection only; speed is measured in bench/, never asserted here.
      testTimeout: 240_000,
      hookTimeout: 600_000,
    },
  };
}

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // They run beside the integration stacks' start-up (`npm test`): hang protection, with
          // room for a busy machine (replay of every recorded history, chunked snapshot writes).
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          // Workflows with stubbed activities on a Temporal dev server of each file's own
          // (test/support/workflow-env.ts): no stack; start-up is the server and the bundle.
          name: 'workflow',
          include: ['test/workflow/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      integration('integration', ['test/integration/**/*.test.ts'], RUNTIME),
      integration('runtime', RUNTIME),
      // The product installed as a platform team would: a stack with a real node (kubelet,
      // kube-proxy, CoreDNS), the project's image, the chart's roles as Pods.
      integration('cluster', ['test/cluster/**/*.test.ts'], [], 'test/cluster/global-setup.ts'),
    ],
  },
});
