import { Injectable } from '@nestjs/common';

/** Wakes the deferred inbox worker when this instance stored a delivery. */
@Injectable()
export class InboxWakeup {
  private listener?: () => void;

  subscribe(listener: () => void): void {
    this.listener = listener;
  }

  wake(): void {
    this.listener?.();
  }
}
