/** The board's validated options. */
export const BOARD_OPTIONS = Symbol('OUTBOX_BOARD_OPTIONS');
/** The `OutboxAdmin` of the outbox the board shows. */
export const BOARD_ADMIN = Symbol('OUTBOX_BOARD_ADMIN');
