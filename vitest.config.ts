import { defineConfig } from 'vitest/config';

const shared = {
  pool: 'forks' as const,
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
          globalSetup: ['test/model-setup.ts'],
          include: ['test/**/*.test.ts'],
          exclude: [
            'test/services/**',
            'test/conformance/kafka.test.ts',
            'test/analytics/http.test.ts',
            'test/dashboard/queries-http.test.ts',
          ],
        },
      },
      {
        // Needs real services; its global setup starts them through deploy/services.sh.
        test: {
          ...shared,
          name: 'services',
          include: [
            'test/services/**/*.test.ts',
            'test/conformance/kafka.test.ts',
            'test/analytics/http.test.ts',
            'test/dashboard/queries-http.test.ts',
          ],
          globalSetup: ['test/global-setup.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
});
