import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../database';

/** Units of one SKU that are still free to reserve. */
@Entity({ name: 'stock_item' })
export class StockItem {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  sku!: string;

  @Column({ type: 'integer' })
  available!: number;

  @UpdateDateColumn({ name: 'updated_at', type: TIMESTAMP_COLUMN })
  updatedAt!: Date;
}
