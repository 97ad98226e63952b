/** A business method as Nest holds it (golevelup hands Nest a copy bound to the provider). */
export type HandlerMethod = (...args: unknown[]) => unknown;
