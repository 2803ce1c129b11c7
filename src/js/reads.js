// @ts-check
// Reads the bindings make on every call, done on the JavaScript side: crossing into wasm once
// with one string costs far less than a property read and a string copy per field.
const NONE = '\u0001'; // a header that is absent (no header value can hold this byte)

/**
 * What kind of body a fetch(input, init) call sends: `n` none, `r` one fetch can send again
 * (a string, bytes, a Blob, form data), `s` a stream (init.body, or a Request's own body), `o`
 * anything fetch reads once and nothing can copy (an async iterable).
 */
function bodyKind(input, init, isObject) {
  const body = isObject(init) ? init.body : undefined;
  if (body === undefined || body === null) {
    return isObject(input) && typeof input.clone === 'function' && isObject(input.body) ? 's' : 'n';
  }
  if (typeof body === 'string' || body instanceof ArrayBuffer || ArrayBuffer.isView(body)
    || body instanceof URLSearchParams || body instanceof Blob || body instanceof FormData) return 'r';
  if (body instanceof ReadableStream) return 's';
  return 'o';
}

const isObject = (v) => v !== null && typeof v === 'object';

/** The headers a fetch(input, init) call sends: init's, else the Request's (undefined when none). */
export function requestHeaders(input, init) {
  const headers = isObject(init) ? init.headers : undefined;
  return headers === undefined && isObject(input) ? input.headers : headers;
}

/** `x-api-key \0 authorization \0 idempotency-key? \0 method \0 body \0 url` of a fetch(input, init) call. */
export function requestFacts(input, init) {
  const headers = requestHeaders(input, init);
  let key = NONE;
  let auth = NONE;
  let idempotent = '0';
  const visit = (name, value) => {
    if (typeof name !== 'string' || typeof value !== 'string') return;
    const lower = name.toLowerCase();
    if (lower === 'x-api-key') key = value;
    else if (lower === 'authorization') auth = value;
    else if (lower === 'idempotency-key') idempotent = '1';
  };
  if (isObject(headers)) {
    if (Array.isArray(headers)) {
      for (const pair of headers) if (isObject(pair)) visit(pair[0], pair[1]);
    } else if (typeof headers.get === 'function') {
      key = headers.get('x-api-key') ?? NONE;
      auth = headers.get('authorization') ?? NONE;
      if (headers.get('idempotency-key') != null) idempotent = '1';
    } else {
      for (const name of Object.keys(headers)) visit(name, headers[name]);
    }
  }
  const method = [init, input].find((v) => isObject(v) && typeof v.method === 'string')?.method ?? 'GET';
  return `${key}\0${auth}\0${idempotent}\0${method}\0${bodyKind(input, init, isObject)}\0${requestUrl(input)}`;
}

/**
 * `mode \0 name \0 value \0 ...` of a fetch(input, init) call, for the cache (the core's
 * `CacheRequest::parse` reads it): its `cache` mode (init's, else a Request's) and every header
 * it sends, in every shape fetch takes. '\u0002' when a part holds a NUL (fetch refuses such a
 * header; the cache leaves the call alone).
 */
export function cacheFacts(input, init) {
  const mode = [init, input].find((v) => isObject(v) && typeof v.cache === 'string')?.cache ?? '';
  const headers = requestHeaders(input, init);
  let out = mode;
  let odd = mode.includes('\0');
  const add = (name, value) => {
    const [n, v] = [String(name), String(value)];
    odd ||= n.includes('\0') || v.includes('\0');
    out += `\0${n}\0${v}`;
  };
  if (isObject(headers)) {
    if (Array.isArray(headers)) {
      for (const pair of headers) if (isObject(pair)) add(pair[0], pair[1]);
    } else if (typeof headers.forEach === 'function' && typeof headers.get === 'function') {
      headers.forEach((value, name) => add(name, value));
    } else {
      for (const name of Object.keys(headers)) add(name, headers[name]);
    }
  }
  return odd ? '\u0002' : out;
}

/** The URL of a fetch(input, init) call, as a string ('' when it has none: fetch will say so). */
function requestUrl(input) {
  if (typeof input === 'string') return input;
  if (input instanceof URL) return input.href;
  if (input !== null && typeof input === 'object' && typeof input.url === 'string') return input.url;
  try {
    return String(input);
  } catch {
    return '';
  }
}

/** The caller's `AbortSignal`: `init.signal`, else that of a `Request` passed as `input`. */
export function callerSignal(input, init) {
  if (init !== null && typeof init === 'object' && init.signal !== null && typeof init.signal === 'object') return init.signal;
  if (input !== null && typeof input === 'object' && input.signal !== null && typeof input.signal === 'object') return input.signal;
  return undefined;
}

/** The `/usage` probe's init: `GET`, asking for JSON, with the caller's credential headers that were sent. */
export function usageInit(key, auth) {
  const headers = { Accept: 'application/json' };
  if (key !== undefined) headers['X-API-Key'] = key;
  if (auth !== undefined) headers.Authorization = auth;
  return { method: 'GET', headers };
}

// The feedback headers the core reads, by lower-case name: their index in its list.
let feedbackNames = new Map();
/** Takes the core's list of feedback header names (comma-separated), once per thread. */
export function useFeedbackNames(list) {
  feedbackNames = new Map(list.split(',').map((name, i) => [name, i]));
}

/**
 * A response's feedback headers in one pass, for one crossing into wasm: each present one as
 * its index's letter (A, B, ...), its value and a NUL; undefined when none is present (every
 * success from an API that sends them only on 429s). A `Headers` is walked once; any other
 * headers-like object is asked by name. A value holding a NUL is no header's: it is left out.
 */
export function feedbackOf(response) {
  let out;
  const add = (i, value) => {
    if (!value.includes('\0')) out = `${out ?? ''}${String.fromCharCode(65 + i)}${value}\0`;
  };
  // Never throws: a response-like object whose headers throw has told what it had so far, and
  // its attempt still settles.
  try {
    const headers = response !== null && typeof response === 'object' ? response.headers : undefined;
    if (headers === null || typeof headers !== 'object') return undefined;
    if (typeof Headers === 'function' && headers instanceof Headers) {
      for (const [name, value] of headers) {
        const i = feedbackNames.get(name);
        if (i !== undefined) add(i, value);
      }
    } else if (typeof headers.get === 'function') {
      for (const [name, i] of feedbackNames) {
        const value = headers.get(name);
        if (typeof value === 'string') add(i, value);
      }
    }
  } catch {
    // What was read stands.
  }
  return out;
}

/** `headers.get(name)` on a Headers-like object, or undefined. */
export function headerValue(headers, name) {
  if (headers === null || typeof headers !== 'object' || typeof headers.get !== 'function') return undefined;
  return headers.get(name) ?? undefined;
}
