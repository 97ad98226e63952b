/** The outbox transport that delivers shipments to the logistics partner by HTTP. */
export const LOGISTICS_TRANSPORT = 'logistics';

/** The partner's endpoint, by name: messages name it, the URL is configuration. */
export const WAREHOUSE_ENDPOINT = 'warehouse';

/**
 * Where the partner receives shipments. The default is this sample's own stand-in for the
 * partner (`WarehouseController`), so that the sample runs alone.
 */
export const LOGISTICS_URL = process.env.LOGISTICS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}/logistics/shipments`;

/**
 * The secret both sides sign and verify with (Standard Webhooks, `whsec_` and base64). The
 * default, `whsec_` + base64 of "sample logistics secret", is for trying the sample locally only.
 */
export const LOGISTICS_WEBHOOK_SECRET = process.env.LOGISTICS_WEBHOOK_SECRET ?? 'whsec_c2FtcGxlIGxvZ2lzdGljcyBzZWNyZXQ=';
