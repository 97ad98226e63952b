import { INestApplication } from '@nestjs/common';
import { OutboxBoardModule } from '../lib/board';
import { freshSchema, namespaced, sql } from '../test/support/database';
import { createTestHttpApp } from '../test/support/test-app';
import { summarise } from './support/stats';

/** Under the test namespace prefix, as the app's schema is (see test/support/database.ts). */
/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_board');
const ROWS = Number(process.env.BENCH_BOARD_ROWS ?? 1_000_000);
const REQUESTS = Number(process.env.BENCH_BOARD_REQUESTS ?? 30);
const WARMUP = 3;

export interface BoardPageRow {
  page: string;
  ms: string;
  p95: string;
  bytes: number;
}

/**
 * Milliseconds for the board to answer a page over HTTP (rendering included) with `ROWS` rows in
 * the outbox table, as a table that has been running for a while holds them: 98% DONE, 1%
 * MANUAL_REQUIRED, 1% FAILED, seven types, ids in write order, one row written (and sent a
 * second later) each second, so the last hour holds 3,600 of them. The board pages by keyset, so its
 * first page, a page half a million rows deep and a status filter should cost alike; the
 * overview counts the whole table (as `OutboxAdmin.stats()` does) and is shown for scale.
 */
export async function benchBoardPage(): Promise<BoardPageRow[]> {
  await freshSchema(SCHEMA);
  let app: INestApplication | undefined;
  try {
    let url: string;
    ({ app, url } = await createTestHttpApp({
      schema: SCHEMA,
      outbox: { dispatcherEnabled: false, notifyEnabled: false },
      imports: [OutboxBoardModule.forRoot({ path: 'board', allowUnauthenticated: true, pageSize: 50 })],
      logger: ['error'],
    }));
    const seedStarted = performance.now();
    await seed();
    const seedSeconds = ((performance.now() - seedStarted) / 1000).toFixed(1);
    const [{ mid, message }] = await sql<{ mid: string; message: string }>(
      `SELECT (max(id) / 2)::text AS mid, (SELECT message_id::text FROM "${SCHEMA}".outbox_message WHERE status = 'MANUAL_REQUIRED' LIMIT 1) AS message
       FROM "${SCHEMA}".outbox_message`,
    );
    const pages: [string, string][] = [
      [`first page of ${ROWS.toLocaleString('en-US')} rows (seeded in ${seedSeconds} s), newest first`, '/board/messages'],
      ['a page half-way down (after = the middle id)', `/board/messages?after=${mid}`],
      ['MANUAL_REQUIRED rows (1%), first page', '/board/messages?status=MANUAL_REQUIRED'],
      ['MANUAL_REQUIRED of one type (0.14%), oldest first', '/board/messages?status=MANUAL_REQUIRED&type=bench.type-3&order=oldest'],
      ['a type no row has (reads every row to find none)', '/board/messages?type=bench.none'],
      ["a message's page", `/board/message?id=${message}`],
      ['a confirmation (counts the filter)', '/board/confirm?action=requeue&status=MANUAL_REQUIRED'],
      ['overview (counts every row, parked keys, last hour)', '/board'],
    ];
    const rows: BoardPageRow[] = [];
    for (const [page, path] of pages) {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        const started = performance.now();
        const response = await fetch(url + path);
        const body = await response.text();
        const elapsed = performance.now() - started;
        if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${body.slice(0, 300)}`);
        bytes = body.length;
        if (i >= WARMUP) times.push(elapsed);
      }
      const summary = summarise(times);
      const p95 = [...times].sort((a, b) => a - b)[Math.ceil(times.length * 0.95) - 1];
      rows.push({ page, ms: `${summary.median.toFixed(1)} (${summary.min.toFixed(1)}–${summary.max.toFixed(1)})`, p95: p95.toFixed(1), bytes });
    }
    return rows;
  } finally {
    await app?.close();
    await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => undefined);
  }
}

/** `ROWS` rows in one statement (generate_series), each with a small payload: listings never read it. */
async function seed(): Promise<void> {
  await sql(
    `INSERT INTO "${SCHEMA}".outbox_message (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts,
                                             attempts, last_error, created_at, next_attempt_at, processed_at)
     SELECT gen_random_uuid(), 'bench.type-' || (g % 7), 'bench-' || g, 'bench_board', 'bench.board', json_build_object('n', g), '{}',
            s.status, 10, CASE WHEN s.status = 'DONE' THEN 0 ELSE 3 END,
            CASE WHEN s.status = 'DONE' THEN NULL ELSE 'broker refused: exchange not found' END,
            now() - (($1::int - g) * interval '1 second'), now(),
            CASE WHEN s.status = 'DONE' THEN now() - (($1::int - g - 1) * interval '1 second') END
     FROM generate_series(1, $1::int) AS g
     CROSS JOIN LATERAL (SELECT CASE WHEN g % 100 = 7 THEN 'MANUAL_REQUIRED' WHEN g % 100 = 8 THEN 'FAILED' ELSE 'DONE' END AS status) AS s`,
    [ROWS],
  );
  await sql(`ANALYZE "${SCHEMA}".outbox_message`);
}
