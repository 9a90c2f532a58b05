/**
 * A child logger made on first use: a request's logger (its lines carry the request id) is
 * handed to every step of the call, but most calls never log a line, and making a pino child
 * (its bindings serialised) is part of every request's cost. Until something reads it, the
 * child is not made; from then on every read and write goes to it.
 */
import type { Bindings, Logger } from "pino";

export function lazyChild(parent: Logger, bindings: Bindings): Logger {
  let child: Logger | undefined;
  const real = () => (child ??= parent.child(bindings));
  return new Proxy(parent, {
    // The target is only the proxy's shape: every access is the child's. Methods read
    // through it get the child as `this` (pino's read their state off `this`).
    get: (_target, property) => {
      const value = Reflect.get(real(), property);
      return typeof value === "function" ? value.bind(real()) : value;
    },
    set: (_target, property, value) => Reflect.set(real(), property, value),
    has: (_target, property) => Reflect.has(real(), property),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
}
