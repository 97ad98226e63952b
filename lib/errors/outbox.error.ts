/** Base class of every error this library throws, so callers can catch them as one family. */
export class OutboxError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
