/**
 * The payment provider's signing secret (Standard Webhooks, `whsec_` and base64). The default,
 * `whsec_` + base64 of "sample payments secret", is for trying the sample locally only.
 */
export const PAYMENTS_WEBHOOK_SECRET = process.env.PAYMENTS_WEBHOOK_SECRET ?? 'whsec_c2FtcGxlIHBheW1lbnRzIHNlY3JldA==';

/** The event type of a captured payment, as the provider sends it. */
export const PAYMENT_SUCCEEDED = 'payment.succeeded';

/** The event type of a declined or failed payment attempt; the customer may pay again after it. */
export const PAYMENT_FAILED = 'payment.failed';
