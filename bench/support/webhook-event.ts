/** Pads the event to about 1 KB, as a payment provider's event with its customer and metadata is. */
const FILLER = 'lorem ipsum dolor sit amet '.repeat(26).trim();
/** A 1 KB JSON webhook event carrying its id, as senders put it in the body as well as the header. */
export function webhookBody(id: string, n: number): string {
  return JSON.stringify({
    id,
    type: 'payment.succeeded',
    created_at: new Date().toISOString(),
    data: {
      object: 'payment',
      order_id: n,
      amount: 4_200 + (n % 1_000),
      currency: 'eur',
      customer: { id: `cus_${n % 10_000}`, email: `customer-${n % 10_000}@example.com`, country: 'DE' },
      metadata: { channel: 'web', campaign: 'autumn', note: FILLER },
    },
  });
}
