/** @type {import('jest').Config} */
const shared = {
  rootDir: '.',
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};

/** @type {import('jest').Config} */
module.exports = {
  // Integration files run in parallel; each owns its database schema and its queues.
  maxWorkers: 2,
  testTimeout: 60_000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.spec.ts'],
      // Real PostgreSQL and RabbitMQ: fail fast, naming the URL, when one does not answer.
      globalSetup: '<rootDir>/test/support/global-setup.ts',
    },
  ],
};
