import { CallHandler, ExecutionContext, NestInterceptor, Provider } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { finalize, Observable } from 'rxjs';

/**
 * Counts the broker deliveries an in-process application is handling, so that a test can tell
 * when every delivery it made has been dealt with. Registered as a global interceptor: Nest runs
 * global interceptors before any method interceptor, so the count spans a delivery's whole
 * handling (the inbox's transaction included) and drops just before golevelup acknowledges or
 * rejects it. It changes nothing of the handling itself.
 *
 * golevelup hands a channel's deliveries to their handlers in the order they arrive, and a
 * delivery reaches this interceptor without waiting on any I/O. So once a delivery that was made
 * after others has been handled (its effects are visible), the earlier ones have at least been
 * counted, and `idle` tells whether they are done.
 */
export class DeliveriesInFlight implements NestInterceptor {
  private handling = 0;

  intercept(_: ExecutionContext, next: CallHandler): Observable<unknown> {
    this.handling++;
    return next.handle().pipe(finalize(() => this.handling--));
  }

  /** True when no delivery is being handled. */
  get idle(): boolean {
    return this.handling === 0;
  }

  /** The providers that register this tracker for every handler of an application. */
  get providers(): Provider[] {
    return [{ provide: APP_INTERCEPTOR, useValue: this }];
  }
}
