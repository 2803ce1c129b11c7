// @ts-check
// Sending a body more than once. A stream is read as it is sent, so before each attempt of a
// request whose body is a stream (init.body, or a Request's own body) the driver splits it: one
// copy goes now, the other is kept for the next attempt. Other bodies go as they are.

/**
 * `[input, init]` to send now and `[input, init]` to keep, as one array of four. A stream in
 * init.body is teed; a Request with a body is cloned (which tees it) and the clone sent.
 */
export function split(input, init) {
  const body = init !== null && typeof init === 'object' ? init.body : undefined;
  if (body instanceof ReadableStream) {
    const [now, later] = body.tee();
    return [input, { ...init, body: now }, input, { ...init, body: later }];
  }
  return [input.clone(), init, input, init];
}

/** Lets go of the copy kept for an attempt that will not come: a tee buffers until read. */
export function release(input, init) {
  const body = init !== null && typeof init === 'object' && init.body instanceof ReadableStream ? init.body : input?.body;
  if (body instanceof ReadableStream && !body.locked) body.cancel().catch(() => {});
}
