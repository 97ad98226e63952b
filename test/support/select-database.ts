/**
 * A jest `setupFiles` module of the integration projects: each project names its database in
 * `globals.TEST_DATABASE`; this puts it where `DATABASE_KIND` and child processes read it.
 */
const kind = (globalThis as { TEST_DATABASE?: unknown }).TEST_DATABASE;
if (typeof kind === 'string') process.env.TEST_DATABASE = kind;

export {};
