// The sample's tests run on PostgreSQL (each file in a schema of its own), whose URL the sample's
// entities read when they load: without DATABASE_URL the sample itself runs on SQLite.
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
