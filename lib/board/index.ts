/**
 * `nestjs-outbox/board`: a web board for operators over the admin service.
 *
 * @module nestjs-outbox/board
 */

export { OutboxBoardModule } from './board.module';
export { OutboxBoardOptions } from './board-options';
export type { BoardGuard, OutboxBoardOptionsInput } from './board-options';
export { OutboxBoardOptionsError } from './board-options';
