import { CanActivate, ExecutionContext, Injectable, Logger, UnauthorizedException } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';

/** The user name the board's basic authentication takes; the password comes from BOARD_PASSWORD. */
const BOARD_USER = 'operator';

/**
 * The sample's guard of the outbox board: HTTP basic authentication as `operator` with the
 * password in BOARD_PASSWORD. Without BOARD_PASSWORD the board is closed to everyone. A real
 * application would use its own authentication and check an operator's role here.
 */
@Injectable()
export class BoardAuthGuard implements CanActivate {
  private readonly logger = new Logger(BoardAuthGuard.name);
  private readonly password = process.env.BOARD_PASSWORD;

  constructor() {
    if (!this.password) this.logger.warn('BOARD_PASSWORD is not set: the board at /board refuses everyone');
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const header = http.getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    if (this.password && header.startsWith('Basic ') && this.matches(Buffer.from(header.slice(6), 'base64').toString('utf8'))) return true;
    // Makes the browser ask for a user and password (the sample runs on Express).
    http.getResponse<{ setHeader(name: string, value: string): void }>().setHeader('WWW-Authenticate', 'Basic realm="outbox board", charset="UTF-8"');
    throw new UnauthorizedException('The board needs the operator password (BOARD_PASSWORD)');
  }

  private matches(credentials: string): boolean {
    const expected = Buffer.from(`${BOARD_USER}:${this.password}`);
    const given = Buffer.from(credentials);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}
