import { HttpException, HttpStatus } from '@nestjs/common';

/** The parts of an Express or Fastify request that tell whether its body bytes were kept. */
export interface RequestWithBody {
  headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
  rawBody?: Buffer;
  body?: unknown;
}

/**
 * The body bytes as sent, which Nest keeps (`rawBody: true`) for the content types it parsed:
 * JSON and urlencoded unless more are registered with `app.useBodyParser(type)`. Never a
 * re-serialization of a parsed body, which would not be the bytes a signature covers, and never
 * an empty body for a request that had one. A request that had a body Nest did not keep is
 * refused: 415 when no parser took its content type, 500 when the application keeps no raw body
 * at all (a mistake the sender should retry past, once it is fixed).
 */
export function rawBodyOf(request: RequestWithBody, who: string): Buffer {
  if (Buffer.isBuffer(request.rawBody)) return request.rawBody;
  const headers = request.headers ?? {};
  const length = headers['content-length'];
  if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return Buffer.alloc(0);
  if (wasParsed(request.body)) {
    throw new HttpException(
      `${who} needs the request body as sent: create the application with NestFactory.create(AppModule, { rawBody: true })`,
      HttpStatus.INTERNAL_SERVER_ERROR,
    );
  }
  const contentType = String(headers['content-type'] ?? 'none')
    .split(';')[0]
    .trim();
  throw new HttpException(
    `${who} cannot take a body of content type ${JSON.stringify(contentType)}: the application has no parser for it (register one with app.useBodyParser)`,
    HttpStatus.UNSUPPORTED_MEDIA_TYPE,
  );
}

/** Whether a body parser filled `body` (Express leaves `{}` or nothing for a type it did not parse). */
function wasParsed(body: unknown): boolean {
  if (body === undefined || body === null) return false;
  if (Buffer.isBuffer(body) || typeof body === 'string') return body.length > 0;
  return typeof body === 'object' && Object.keys(body).length > 0;
}
