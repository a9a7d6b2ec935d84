import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // One real stack (etcd, kube-apiserver, controller-manager, Temporal) for the whole run.
          globalSetup: ['test/support/global-setup.ts'],
          // A killed run takes its test files' processes along (the stack goes with its lifeline).
          setupFiles: ['test/support/exit-with-runner.ts'],
          // Files share that stack and this 2-core machine: run them one at a time.
          fileParallelism: false,
          pool: 'forks',
          // Hang protection only; speed is measured in bench/, never asserted here.
          testTimeout: 240_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
