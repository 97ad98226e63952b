import { Controller, DynamicModule, Inject, Logger, Module, OnModuleInit, UseGuards } from '@nestjs/common';
import { getOutboxAdminToken } from '../module/outbox-tokens';
import { BOARD_ADMIN, BOARD_OPTIONS, OutboxBoardOptions, OutboxBoardOptionsInput, validateBoardOptions } from './board-options';
import { BoardController } from './board.controller';

/**
 * A web board for operators, mounted in the app at `options.path` (like bull-board for queues):
 * counts, lag, throughput, MANUAL_REQUIRED and parked keys; lists with the CLI's filters; a
 * message's payload, headers and errors; and the admin's actions, each confirmed with its count.
 * It refuses to start without a guard unless `allowUnauthenticated` says so.
 * @example OutboxBoardModule.forRoot({ path: 'board', guards: [AdminGuard] })
 */
@Module({})
export class OutboxBoardModule implements OnModuleInit {
  private readonly logger = new Logger('OutboxBoard');

  /** Nest creates it. @internal */
  constructor(@Inject(BOARD_OPTIONS) private readonly options: OutboxBoardOptions) {}

  /**
   * The board, mounted at `options.path` behind `options.guards`. Throws `OutboxBoardOptionsError`
   * naming each bad option, or when there is neither a guard nor `allowUnauthenticated`.
   */
  static forRoot(input: OutboxBoardOptionsInput): DynamicModule {
    const options = validateBoardOptions(input);
    // A class of its own per mount: its path and guards are metadata of the class.
    class OutboxBoardController extends BoardController {}
    Controller(options.path)(OutboxBoardController);
    if (options.guards && options.guards.length > 0) UseGuards(...options.guards)(OutboxBoardController);
    return {
      module: OutboxBoardModule,
      controllers: [OutboxBoardController],
      providers: [
        { provide: BOARD_OPTIONS, useValue: options },
        { provide: BOARD_ADMIN, useExisting: getOutboxAdminToken(options.outboxName) },
      ],
    };
  }

  /** @internal */
  onModuleInit(): void {
    if (!this.options.guards || this.options.guards.length === 0) {
      this.logger.warn(
        `The outbox board at /${this.options.path} is mounted without a guard (allowUnauthenticated): anyone who reaches it can requeue, abandon and purge messages`,
      );
    }
  }
}
