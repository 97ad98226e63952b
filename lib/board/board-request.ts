/**
 * What the board reads of a request, the same under Express and Fastify: both hand a controller
 * a request whose `headers` are Node's (lower-case names), and `@Query()` and `@Body()` as plain
 * objects of strings (arrays for repeated names).
 */
export interface BoardRequest {
  headers: Record<string, string | string[] | undefined>;
  /** Express: the socket; Fastify keeps Node's request as `raw`. */
  socket?: { encrypted?: boolean };
  raw?: { socket?: { encrypted?: boolean } };
}

/** One header's value (the first, when repeated). */
export function headerOf(request: BoardRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Whether the browser reached the board over TLS (directly, or through a proxy that says so). */
export function isSecure(request: BoardRequest): boolean {
  if (headerOf(request, 'x-forwarded-proto')?.split(',')[0].trim() === 'https') return true;
  return Boolean(request.socket?.encrypted ?? request.raw?.socket?.encrypted);
}

/** A query or form: each field a string, or several strings for a repeated name. */
export type BoardFields = Record<string, string | string[]>;

/**
 * The fields of a query or form as the board takes them: strings, or arrays of strings; a field
 * the body parser nested (`a[b]=c`) is no field of the board's, and is dropped.
 */
export function boardFields(input: unknown): BoardFields {
  const fields: BoardFields = {};
  if (input === null || typeof input !== 'object') return fields;
  for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
    if (typeof value === 'string') fields[name] = value;
    else if (Array.isArray(value) && value.every((item) => typeof item === 'string')) fields[name] = value;
  }
  return fields;
}

/** A single-valued field: its value, or the first of several. */
export function fieldOf(fields: BoardFields, name: string): string | undefined {
  const value = fields[name];
  return Array.isArray(value) ? value[0] : value;
}
