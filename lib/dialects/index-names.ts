/** Names of the indexes the state machine needs on either table. */
export function stateIndexNames(table: string) {
  return {
    primaryKey: `PK_${table}`,
    claimable: `IDX_${table}_claimable`,
    processing: `IDX_${table}_processing`,
    ordering: `IDX_${table}_ordering`,
  };
}

/** Names of the outbox table's constraints and indexes, the same on every database. */
export function outboxIndexNames(table: string) {
  return { ...stateIndexNames(table), messageId: `UQ_${table}_message_id`, typeBizKey: `UQ_${table}_type_biz_key` };
}

/** Names of the inbox table's constraints and indexes, the same on every database. */
export function inboxIndexNames(table: string) {
  return { ...stateIndexNames(table), consumerMessageId: `UQ_${table}_consumer_message_id`, consumerBizKey: `UQ_${table}_consumer_biz_key` };
}
