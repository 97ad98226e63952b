import { CanActivate, ExecutionContext, HttpException, Inject, Injectable, mixin, Type, UnauthorizedException } from '@nestjs/common';
import { printable } from '../message/printable';
import { WEBHOOK_REFUSALS } from './refusal-log';
import { markRefusalLogged } from './webhook-route';
import { ModuleRef } from '@nestjs/core';
import { WebhookOptionsError } from '../errors/options.errors';
import { rawBodyOf } from './raw-body';
import { verifyWebhook, WebhookHeaders, webhookSecretsProblems, WebhookSecrets, webhookToleranceProblems } from '../transport/http/standard-webhooks';

/** Where the guard leaves what it verified on the request: `request[VERIFIED_WEBHOOK]`. */
export const VERIFIED_WEBHOOK = Symbol('VERIFIED_WEBHOOK');

/** The authenticated `webhook-id` (use it as the idempotency key) and `webhook-timestamp` (seconds). */
export interface VerifiedWebhook {
  /** The authenticated `webhook-id`. */
  id: string;
  /** The authenticated `webhook-timestamp`, in seconds since the epoch. */
  timestamp: number;
}

/** The settings of {@link StandardWebhooksGuard.for}. */
export interface StandardWebhooksGuardOptions {
  /**
   * The `whsec_…` secrets any of which may sign (two while one is rotated out), or a function
   * returning them, called on each request, to read them where they live:
   * `(moduleRef) => moduleRef.get(ConfigService, { strict: false }).getOrThrow('WEBHOOK_SECRET')`.
   * A function's secrets are checked when it returns; a bad one fails the request with a 500.
   */
  secrets: WebhookSecrets | ((moduleRef: ModuleRef) => WebhookSecrets | Promise<WebhookSecrets>);
  /** How old or how far ahead a timestamp may be, in seconds; 300 (the spec's 5 minutes) by default. */
  toleranceSeconds?: number;
}

interface GuardedRequest {
  headers: WebhookHeaders;
  rawBody?: Buffer;
  [VERIFIED_WEBHOOK]?: VerifiedWebhook;
}

const OPTION_NAMES = ['secrets', 'toleranceSeconds'];
/** Who refuses, in the log. */
const GUARD = 'StandardWebhooksGuard';

/**
 * Lets through only HTTP requests signed as Standard Webhooks prescribe, over the body's raw bytes
 * (`NestFactory.create(AppModule, { rawBody: true })`); others get 401 with the reason. Declare it
 * with its secrets: `@UseGuards(StandardWebhooksGuard.for({ secrets: [process.env.WEBHOOK_SECRET!] }))`.
 * On success the request carries a `VerifiedWebhook` under `VERIFIED_WEBHOOK`.
 */
@Injectable()
export class StandardWebhooksGuard implements CanActivate {
  /** The guard class for these options, checked now: a mistake fails at start-up, not on the first webhook. */
  static for(options: StandardWebhooksGuardOptions): Type<StandardWebhooksGuard> {
    const problems = Object.keys(options ?? {})
      .filter((key) => !OPTION_NAMES.includes(key))
      .map((key) => `${key} is not a StandardWebhooksGuard option`);
    if (typeof options?.secrets !== 'function') problems.push(...webhookSecretsProblems(options?.secrets));
    if (options?.toleranceSeconds !== undefined) problems.push(...webhookToleranceProblems(options.toleranceSeconds));
    if (problems.length > 0) throw new WebhookOptionsError(problems);

    class ConfiguredStandardWebhooksGuard extends StandardWebhooksGuard {
      protected override readonly options = options;
    }
    return mixin(ConfiguredStandardWebhooksGuard);
  }

  protected readonly options?: StandardWebhooksGuardOptions;

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(@Inject(ModuleRef) private readonly moduleRef: ModuleRef) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (!this.options) throw new WebhookOptionsError(['use @UseGuards(StandardWebhooksGuard.for({ secrets })), not the bare class']);
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    const { secrets, toleranceSeconds } = this.options;
    let body: Buffer;
    try {
      body = rawBodyOf(request, 'StandardWebhooksGuard');
    } catch (error) {
      // Nest logs no HttpException: the refusal would go unseen.
      if (error instanceof HttpException) {
        WEBHOOK_REFUSALS.refused(GUARD, error.getStatus(), printable(error.message, 500));
        markRefusalLogged(request);
      }
      throw error;
    }
    const verification = verifyWebhook({
      headers: request.headers,
      body,
      secrets: typeof secrets === 'function' ? await secrets(this.moduleRef) : secrets,
      toleranceSeconds,
    });
    if (!verification.ok) {
      WEBHOOK_REFUSALS.refused(GUARD, 401, printable(verification.reason, 500));
      markRefusalLogged(request);
      throw new UnauthorizedException(`Webhook rejected: ${verification.reason}`);
    }
    request[VERIFIED_WEBHOOK] = { id: verification.id, timestamp: verification.timestamp };
    return true;
  }
}
