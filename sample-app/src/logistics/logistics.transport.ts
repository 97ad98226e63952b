import { HttpOutboxTransport } from '../../../lib/entries/transports';
import { LOGISTICS_URL, LOGISTICS_WEBHOOK_SECRET, WAREHOUSE_ENDPOINT } from './logistics.constants';

/**
 * The HTTP transport to the logistics partner: each message POSTed to the endpoint its
 * `destination` names, signed, retried with backoff, and held back unattempted while the partner
 * is down. It has a lane of its own, so a slow partner never delays the RabbitMQ events.
 */
export const LogisticsTransport = HttpOutboxTransport.for({
  endpoints: { [WAREHOUSE_ENDPOINT]: { url: LOGISTICS_URL, secret: LOGISTICS_WEBHOOK_SECRET } },
});
