import { Module } from '@nestjs/common';
import { WarehouseController } from './warehouse.controller';

/** The logistics partner's stand-in; the transport that reaches it is configured in AppModule. */
@Module({ controllers: [WarehouseController] })
export class LogisticsModule {}
