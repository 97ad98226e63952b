import { RabbitPayload, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { CallHandler, createParamDecorator, ExecutionContext, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { Observable, of, throwError } from 'rxjs';
import { InboxHandler } from '../../lib';
import { callAsNest, runsMethodAlone } from '../../lib/inbox/direct-call';

class Logging implements NestInterceptor {
  intercept(_: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

const Body = createParamDecorator((_: unknown, context: ExecutionContext) => context.getArgs()[0]);
const route = { exchange: 'orders', routingKey: 'order.paid', queue: 'inventory' };

class Handlers {
  @RabbitSubscribe(route)
  @InboxHandler()
  async plain(): Promise<void> {}

  @RabbitSubscribe(route)
  @InboxHandler()
  @UseInterceptors(Logging)
  async interceptedOutside(): Promise<void> {}

  @RabbitSubscribe(route)
  @UseInterceptors(Logging)
  @InboxHandler()
  async interceptedInside(): Promise<void> {}

  @RabbitSubscribe(route)
  @InboxHandler()
  async withPayloadPipe(@RabbitPayload() _event: unknown): Promise<void> {}

  @RabbitSubscribe(route)
  @InboxHandler()
  async withCustomParameter(@Body() _event: unknown): Promise<void> {}
}

describe('runsMethodAlone', () => {
  const alone = (method: keyof Handlers) => runsMethodAlone(Handlers, method, Handlers.prototype[method]);

  it('holds for a handler without parameter decorators or later interceptors', () => {
    expect(alone('plain')).toBe(true);
  });

  it('holds when another interceptor runs around the inbox (written below @InboxHandler, so applied first)', () => {
    expect(alone('interceptedOutside')).toBe(true);
  });

  it('does not hold when an interceptor runs inside the inbox (written above @InboxHandler)', () => {
    expect(alone('interceptedInside')).toBe(false);
  });

  it('does not hold when a parameter decorator lets Nest run pipes', () => {
    expect(alone('withPayloadPipe')).toBe(false);
    expect(alone('withCustomParameter')).toBe(false);
  });
});

describe('callAsNest', () => {
  it('calls the method on the instance with the arguments and settles with its promise', async () => {
    const instance = {
      factor: 2,
      async double(this: { factor: number }, n: unknown) {
        return (n as number) * this.factor;
      },
    };
    await expect(callAsNest(instance.double as never, instance, [21])).resolves.toBe(42);
  });

  it('waits for a returned Observable to complete, with its last value', async () => {
    let completed = false;
    const method = () =>
      new Observable((subscriber) => {
        setTimeout(() => {
          subscriber.next('first');
          subscriber.next('done');
          completed = true;
          subscriber.complete();
        }, 10);
      });
    await expect(callAsNest(method, undefined, [])).resolves.toBe('done');
    expect(completed).toBe(true);
    await expect(callAsNest(() => of(), undefined, [])).resolves.toBeUndefined();
  });

  it('fails as the method fails: thrown, rejected, or through its Observable', async () => {
    await expect(
      callAsNest(
        () => {
          throw new Error('thrown');
        },
        undefined,
        [],
      ),
    ).rejects.toThrow('thrown');
    await expect(callAsNest(async () => Promise.reject(new Error('rejected')), undefined, [])).rejects.toThrow('rejected');
    await expect(callAsNest(() => throwError(() => new Error('errored')), undefined, [])).rejects.toThrow('errored');
  });
});
