import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A business row written in the same transaction as the outbox message. */
@Entity({ name: 'test_order' })
export class TestOrder {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 40 })
  status!: string;
}

/** What an inbox handler of the fixture wrote; no unique key, so a duplicate effect would show. */
@Entity({ name: 'test_effect' })
export class TestEffect {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 200 })
  consumer!: string;

  @Column({ name: 'order_id', type: 'int' })
  orderId!: number;

  @Column({ name: 'message_id', type: 'varchar', length: 255, nullable: true })
  messageId!: string | null;
}
