/** @type {import('jest').Config} */
const shared = {
  rootDir: '.',
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // Nest 12's packages are ES modules, which Jest's loader cannot require on Node < 24.9.
    '/node_modules/@nestjs/.+\\.js$': '<rootDir>/test/support/esm-to-cjs.js',
  },
  transformIgnorePatterns: ['/node_modules/(?!@nestjs/)'],
};

/**
 * The integration suite on one database. Each project names its database in
 * `globals.TEST_DATABASE` (read by test/support/database.ts through select-database.ts) and has a
 * global setup of its own that fails fast, naming the URL to set, when a service does not answer.
 */
function integration(database, name, extra = {}) {
  return {
    ...shared,
    displayName: `integration:${name}`,
    testMatch: ['<rootDir>/test/integration/**/*.spec.ts'],
    globals: { TEST_DATABASE: database },
    setupFiles: ['<rootDir>/test/support/select-database.ts'],
    globalSetup: `<rootDir>/test/support/global-setup/${name}.ts`,
    ...extra,
  };
}

/** The projects named after `option` (--selectProjects / --ignoreProjects) on the command line. */
function projectsListed(option) {
  const values = [];
  for (let i = 0; i < process.argv.length; i++) {
    const arg = process.argv[i];
    if (arg.startsWith(`${option}=`)) values.push(arg.slice(option.length + 1));
    else if (arg === option) for (let j = i + 1; j < process.argv.length && !process.argv[j].startsWith('-'); j++) values.push(process.argv[j]);
  }
  return values;
}

/** Whether the command line leaves `project` selected. */
function isSelected(project) {
  const selected = projectsListed('--selectProjects');
  return (selected.length === 0 || selected.includes(project)) && !projectsListed('--ignoreProjects').includes(project);
}

/**
 * MySQL 8 comes from a testcontainers container (or MYSQL_URL). Where neither is there, the
 * project keeps its name but no files, and says so once: the run neither fails nor waits.
 */
async function mysql8Project() {
  const project = integration('mysql', 'mysql8', { globalTeardown: '<rootDir>/test/support/global-setup/mysql8-teardown.ts' });
  if (process.env.MYSQL_URL || !isSelected(project.displayName)) return { project, skipped: false };
  try {
    await require('testcontainers').getContainerRuntimeClient();
    return { project, skipped: false };
  } catch {
    console.warn('MySQL 8: skipped, no Docker engine answers (testcontainers)');
    return { project: { ...project, testPathIgnorePatterns: ['.*'], globalSetup: undefined, globalTeardown: undefined }, skipped: true };
  }
}

/** @returns {Promise<import('jest').Config>} */
module.exports = async () => {
  const mysql8 = await mysql8Project();
  return {
    // Integration files run in parallel, across the database projects too; each owns its
    // namespace (schema, database or file) and its broker objects.
    maxWorkers: 2,
    testTimeout: 60_000,
    // Selecting only the skipped MySQL 8 project is not a failure.
    passWithNoTests: mysql8.skipped && projectsListed('--selectProjects').join() === mysql8.project.displayName,
    projects: [
      { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
      // The sample app's own tests, as a user writes them with nestjs-outbox/testing (PostgreSQL, no broker).
      {
        ...shared,
        displayName: 'sample',
        testMatch: ['<rootDir>/sample-app/test/**/*.spec.ts'],
        setupFiles: ['<rootDir>/sample-app/test/environment.ts'],
        globalSetup: '<rootDir>/test/support/global-setup/postgres.ts',
      },
      integration('postgres', 'postgres'),
      integration('mariadb', 'mariadb'),
      integration('sqlite', 'sqlite'),
      mysql8.project,
    ],
  };
};
