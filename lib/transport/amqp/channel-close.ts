/** A channel-level error the broker closed a channel with (amqplib's error, as emitted on the channel). */
export interface BrokerCloseError {
  /** The AMQP reply code: 403 ACCESS_REFUSED, 404 NOT_FOUND, 406 PRECONDITION_FAILED… */
  code?: number;
  message: string;
}

/**
 * Which of a channel's unconfirmed publications caused the broker to close it. RabbitMQ names
 * the exchange in the errors a publish can cause about its exchange (404 "no exchange 'x' in
 * vhost '/'", 403 "access to exchange 'x' in vhost '/' refused", "cannot publish to internal
 * exchange 'x' in vhost '/'"); other errors (406 about a header, a size limit) name no message.
 *
 * @returns the exchanges named (their publications are the culprits, the others innocent), or
 *   `undefined` when the error names none of them: every publication is then a suspect.
 */
export function exchangesBlamed(error: BrokerCloseError, exchanges: Iterable<string>): Set<string> | undefined {
  const blamed = new Set<string>();
  for (const exchange of exchanges) {
    if (error.message.includes(`exchange '${exchange}' in vhost`)) blamed.add(exchange);
  }
  return blamed.size > 0 ? blamed : undefined;
}

/** Errors a retry of the same message cannot escape (406: the broker refuses the message itself). */
export function isPermanentRefusal(error: BrokerCloseError): boolean {
  return error.code === 406;
}
