// @ts-check
// Disposing of a body in JavaScript, which has the pieces built in: its JSON for the quota
// check (decoded only when the gate asks for it), and a cancel whose failure nobody needs to
// hear about.

/**
 * A body's JSON from its chunks (Uint8Arrays): the parsed object, or null when the body is not
 * JSON. Bad bytes are replaced by U+FFFD, as a lossy UTF-8 decoding does.
 */
export function jsonFacts(chunks) {
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  try {
    const json = JSON.parse(new TextDecoder('utf-8').decode(bytes));
    return json !== null && typeof json === 'object' ? json : null;
  } catch {
    return null;
  }
}

/**
 * A read answer kept to be given again: its status, its headers' pairs and its body (the
 * chunks, joined).
 */
export function keepAnswer(response, chunks) {
  const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) { body.set(c, at); at += c.length; }
  return { status: response.status, headers: [...response.headers], body };
}

/** A kept answer given again: a new Response, marked `x-odds-gate: <marker>`. */
export function giveAgain(kept, marker) {
  const headers = new Headers(kept.headers);
  headers.set('x-odds-gate', marker);
  return new Response(kept.body.slice(), { status: kept.status, headers });
}

/** Cancels a body or a reader; a failed cancel (thrown or throttled) is ignored. */
export function cancel(stream) {
  try {
    const pending = typeof stream?.cancel === 'function' ? stream.cancel() : undefined;
    if (pending instanceof Promise) pending.catch(() => {});
  } catch {
    // nobody to tell
  }
}
