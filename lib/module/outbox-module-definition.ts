import { ConfigurableModuleBuilder } from '@nestjs/common';
import { OutboxModuleOptionsInput } from '../options/outbox-module-options';
import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from '../naming/table-names';
import { OutboxModuleStaticOptions } from '../options/outbox-module-static-options';

export const {
  ConfigurableModuleClass: ConfigurableOutboxModule,
  MODULE_OPTIONS_TOKEN: OUTBOX_MODULE_RAW_OPTIONS,
  OPTIONS_TYPE: OUTBOX_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: OUTBOX_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<OutboxModuleOptionsInput>({ moduleName: 'Outbox' })
  .setClassMethodName('forRoot')
  .setExtras<OutboxModuleStaticOptions>(
    {
      tableName: DEFAULT_OUTBOX_TABLE,
      inboxTableName: DEFAULT_INBOX_TABLE,
      dataSourceName: undefined,
      transport: undefined,
      transports: undefined,
      defaultTransport: undefined,
      isGlobal: true,
      name: undefined,
      transactionConnectionName: undefined,
    },
    (definition) => definition,
  )
  .build();
