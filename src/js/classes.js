// @ts-check
// The package's error classes as errors.rs makes them: pkg-template/errors.js registers them at
// load time, so `instanceof` works against the classes the package exports; unregistered (the
// wasm tests) a plain Error with the same name and fields stands in.
let classes = {};
// Every error packageError made, by its name: the gate's own refusals are known by who made
// them, never by a name anyone's error can carry.
const made = new WeakMap();

/** Keeps the package's `GateAbandonedError` and `QuotaExhaustedError` classes. */
export function keepClasses(abandoned, quota) {
  classes = { GateAbandonedError: abandoned, QuotaExhaustedError: quota };
}

/** An error of the package's class `name` with `message` and `fields`. */
export function packageError(name, message, fields) {
  const error = build(name, message, fields);
  made.set(error, name);
  return error;
}

/** The package's class name `value` was made as by packageError, or undefined. */
export function madeAs(value) {
  return value !== null && typeof value === 'object' ? made.get(value) : undefined;
}

function build(name, message, fields) {
  const Class = classes[name];
  if (Class !== undefined) {
    try {
      return Reflect.construct(Class, [message, fields]);
    } catch {
      // A class that cannot be made: the plain error below says the same.
    }
  }
  const error = new Error(message);
  error.name = name;
  return Object.assign(error, fields);
}
