// Disposing of a body in JavaScript, which has the pieces built in: its text for the quota
// check, and a cancel whose failure nobody needs to hear about. Kept here rather than in Rust,
// where they would bring UTF-8 repair and a closure of their own into the wasm module.

/**
 * The UTF-8 text of a body's chunks (Uint8Arrays), bad bytes replaced by U+FFFD and a BOM kept,
 * as Rust's `String::from_utf8_lossy` does.
 */
export function utf8Text(chunks) {
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
}

/** Cancels a body or a reader; a failed cancel (thrown or rejected) is ignored. */
export function cancel(stream) {
  try {
    const pending = typeof stream?.cancel === 'function' ? stream.cancel() : undefined;
    if (pending instanceof Promise) pending.catch(() => {});
  } catch {
    // nobody to tell
  }
}
