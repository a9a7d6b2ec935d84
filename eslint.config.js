// Flat ESLint config. The important rules are the ones for src/workflows and src/domain:
// workflow code runs in Temporal's deterministic sandbox, so Node built-ins and I/O libraries
// are banned there; src/domain is shared by workflows and activities, so it is held to the same.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);
const ioLibraries = [
  '@kubernetes/client-node',
  'cloudflare',
  'etcd3',
  '@grpc/grpc-js',
  'pino',
  'prom-client',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', 'deploy/**', '.state/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, ...ioLibraries].map((name) => ({
            name,
            message: 'Workflow code must be deterministic: do I/O in an activity (src/activities).',
          })),
          patterns: [
            {
              group: ['**/activities/*', '!**/activities/index.js'],
              allowTypeImports: true,
              message: 'Import activity types only.',
            },
            {
              group: ['**/kube/*', '**/infra/*', '**/watcher/*', '**/workers/*', '**/cli/*'],
              message: 'Workflow code must not import I/O modules.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, ...ioLibraries, '@temporalio/workflow'].map((name) => ({
            name,
            message: 'src/domain is pure and workflow-safe: I/O belongs in src/activities, Node-only code elsewhere.',
          })),
          patterns: [
            {
              group: [
                '**/activities/*',
                '**/kube/*',
                '**/infra/*',
                '**/watcher/*',
                '**/workers/*',
                '**/cli/*',
                '**/codec/*',
              ],
              message: 'src/domain must not import I/O or Node-only modules.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  // CommonJS modules the SDK require()s (src/temporal/failure-converter.cjs).
  {
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', exports: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
