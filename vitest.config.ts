import { defineConfig } from 'vitest/config';

const shared = {
  pool: 'forks' as const,
  // Every CLI a test starts runs the TypeScript as it is (bin/bioalchemy.js through tsx), never a
  // stale dist/; test/cli/start.test.ts runs the compiled one on purpose.
  env: { BIOALCHEMY_FROM_SOURCE: '1' },
  testTimeout: 60_000,
  hookTimeout: 300_000,
};

export default defineConfig({
  test: {
    // Two cores here: more workers only make the broker-backed suites slower.
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: 'unit',
          // The local model for the one test that runs it (test/llm/local.test.ts).
          globalSetup: ['test/setup/model.ts', 'test/setup/tools.ts'],
          include: ['test/**/*.test.ts'],
          exclude: [
            'test/services/**',
            'test/conformance/kafka.test.ts',
            'test/analytics/http.test.ts',
            'test/dashboard/queries-http.test.ts',
            'test/deploy/image.test.ts',
            'test/deploy/compose-up.test.ts',
          ],
        },
      },
      {
        // Needs real services; its global setup starts them through deploy/services.sh.
        test: {
          ...shared,
          name: 'services',
          // Workers of a deployment share stamp keys (topology/runtime/kafka/stamp-seal.ts): with
          // none, Kafka trusts no stamp and validates every record it reads.
          env: { ...shared.env, BIOALCHEMY_STAMP_KEYS: 'services-test-stamp-key-1' },
          include: [
            'test/services/**/*.test.ts',
            'test/conformance/kafka.test.ts',
            'test/analytics/http.test.ts',
            'test/dashboard/queries-http.test.ts',
            // The images its global setup builds, run against the loopback services.
            'test/deploy/image.test.ts',
            'test/deploy/compose-up.test.ts',
          ],
          globalSetup: ['test/setup/services.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
});
