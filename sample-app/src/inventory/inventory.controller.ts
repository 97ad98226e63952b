import { Controller, Get } from '@nestjs/common';
import { InventoryService, InventorySnapshot } from './inventory.service';

/** HTTP surface of the inventory side: read-only, for checking what the consumer did. */
@Controller('inventory')
export class InventoryController {
  constructor(private readonly inventory: InventoryService) {}

  /** Stock levels and the latest reservations (one per paid order). */
  @Get()
  snapshot(): Promise<InventorySnapshot> {
    return this.inventory.snapshot();
  }
}
