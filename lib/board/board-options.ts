import { CanActivate, Type } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, validateSync } from 'class-validator';
import { OutboxError } from '../errors';

/** A guard as `@UseGuards()` takes it: a class (Nest creates it, with its dependencies) or an instance. */
export type BoardGuard = Type<CanActivate> | CanActivate;

/** How `OutboxBoardModule.forRoot()` mounts the board. */
export class OutboxBoardOptions {
  /**
   * The path the board answers under, relative to the app's global prefix: letters, digits,
   * `-`, `_` and `/` between segments. Default `board`.
   */
  @IsString()
  @Matches(/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/, { message: 'path must be segments of letters, digits, - and _ joined by /, without a leading or trailing /' })
  path = 'board';

  /**
   * Guards run before every page and action of the board (`@UseGuards()`): authentication and
   * authorisation are the app's. Required unless `allowUnauthenticated`.
   */
  @IsOptional()
  guards?: BoardGuard[];

  /**
   * Mounts the board with no guard of its own, for an app whose global guard or network already
   * protects it. Logged as a warning at start-up.
   */
  @IsOptional()
  @IsBoolean()
  allowUnauthenticated?: boolean;

  /** Shows everything and changes nothing: no action buttons, and every POST is refused. */
  @IsOptional()
  @IsBoolean()
  readOnly?: boolean;

  /**
   * The key signing CSRF tokens: at least 32 characters, the same on every instance behind one
   * address. Default: random per process, so a form shown by one instance and posted to another
   * is refused, and the operator reloads the page.
   */
  @IsOptional()
  @IsString()
  @MinLength(32)
  csrfSecret?: string;

  /** The outbox the board shows, for an app with named outboxes (`OutboxModule.forRoot({ name })`). Default: the unnamed one. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  outboxName?: string;

  /** Characters of a payload, headers or error shown on a page; the rest is cut, and said to be. Default 20000. */
  @IsInt()
  @Min(100)
  @Max(1_000_000)
  displayLimit = 20_000;

  /** Rows per page of a listing: 1 to 1000, default 50. */
  @IsInt()
  @Min(1)
  @Max(1000)
  pageSize = 50;

  /** The title of every page, to tell one app's board from another's. Default `Outbox`. */
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  title = 'Outbox';
}

/** What `OutboxBoardModule.forRoot()` takes: every field optional except a guard or `allowUnauthenticated`. */
export type OutboxBoardOptionsInput = Partial<OutboxBoardOptions>;

/**
 * Applies defaults and validates; throws `OutboxBoardOptionsError` naming every bad option. A
 * board with neither a guard nor `allowUnauthenticated` is refused: it would let anyone who can
 * reach the app requeue, abandon or purge messages.
 */
export function validateBoardOptions(input: OutboxBoardOptionsInput | undefined): OutboxBoardOptions {
  // Guards stay as given: class-transformer would copy a guard instance into a plain object.
  const { guards, ...plain } = input ?? {};
  const options = plainToInstance(OutboxBoardOptions, plain, { exposeDefaultValues: true });
  options.guards = guards;
  const problems = validateSync(options, { forbidUnknownValues: true }).flatMap((error) =>
    Object.values(error.constraints ?? {}).map((text) => (text.startsWith(error.property) ? text : `${error.property}: ${text}`)),
  );
  const known = new Set(Object.keys(new OutboxBoardOptions()).concat(['guards', 'allowUnauthenticated', 'readOnly', 'csrfSecret', 'outboxName']));
  for (const key of Object.keys(input ?? {})) if (!known.has(key)) problems.push(`${key} is not an OutboxBoardModule option`);
  if (guards !== undefined && (!Array.isArray(guards) || !guards.every(isGuard))) {
    problems.push('guards must be an array of guard classes or instances (each with a canActivate method)');
  }
  if ((guards === undefined || (Array.isArray(guards) && guards.length === 0)) && options.allowUnauthenticated !== true) {
    problems.push(
      'guards: the board changes messages, so it needs a guard (guards: [AdminGuard]); set allowUnauthenticated: true only when a global guard or the network protects it',
    );
  }
  if (problems.length > 0) throw new OutboxBoardOptionsError(problems);
  return options;
}

function isGuard(guard: unknown): boolean {
  if (typeof guard === 'function') return typeof (guard.prototype as { canActivate?: unknown } | undefined)?.canActivate === 'function';
  return typeof guard === 'object' && guard !== null && typeof (guard as { canActivate?: unknown }).canActivate === 'function';
}

/** Invalid `OutboxBoardModule` options, reported at start-up with each offending option's name. */
export class OutboxBoardOptionsError extends OutboxError {
  constructor(
    /** Each offending option with what is wrong with it, one sentence each. */
    readonly problems: string[],
  ) {
    super(`Invalid OutboxBoardModule options: ${problems.join('; ')}`);
  }
}

/** The board's validated options. */
export const BOARD_OPTIONS = Symbol('OUTBOX_BOARD_OPTIONS');
/** The `OutboxAdmin` of the outbox the board shows. */
export const BOARD_ADMIN = Symbol('OUTBOX_BOARD_ADMIN');
