/**
 * The first `maxBytes` of a response's body as text, the rest left unread: a small body is read
 * to its end, so that the connection goes back to the keep-alive pool; a larger one is cancelled,
 * so that an endpoint answering a gigabyte costs nothing but a closed connection.
 */
export async function responseStart(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size <= maxBytes) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
      chunks.push(value);
      size += value.length;
    }
    await reader.cancel();
  } catch {
    // A body that breaks off tells nothing more about the outcome than its status does.
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
}
