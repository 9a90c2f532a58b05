/**
 * Suggestions for misspelt names: configuration keys and environment variables. The keys a
 * config object accepts are read from the zod schema itself (walking through optional, default,
 * prefault, pipe and the like), so a field added to the schema is suggested without a list to
 * keep in sync.
 */
import { distance } from "fastest-levenshtein";
import type { z } from "zod";

/** Case, `_` and `-` do not count: `min_idle` and `MinIdle` both mean `minIdle`. */
function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, "");
}

/** Edits tolerated before a candidate stops looking like what was meant. */
function tolerance(length: number): number {
  return length <= 3 ? 1 : Math.max(2, Math.floor(length / 3));
}

/** The candidate `input` most likely meant, or undefined when none is close. */
export function suggest(input: string, candidates: Iterable<string>): string | undefined {
  const wanted = normalize(input);
  let best: { name: string; score: number; raw: number } | undefined;
  for (const name of candidates) {
    if (name === input) continue;
    const score = distance(wanted, normalize(name));
    if (score > tolerance(Math.max(wanted.length, normalize(name).length))) continue;
    const raw = distance(input, name);
    if (!best || score < best.score || (score === best.score && raw < best.raw)) best = { name, score, raw };
  }
  return best?.name;
}

type Schema = z.core.$ZodType;

/**
 * The schema a value at this level is checked by once wrappers that do not change its shape are
 * peeled off. A pipe is entered on its input side unless that side is a transform (preprocess).
 */
export function unwrap(schema: Schema): Schema {
  for (let depth = 0; depth < 32; depth++) {
    const def = (schema as z.core.$ZodTypes)._zod.def;
    switch (def.type) {
      case "optional":
      case "nullable":
      case "default":
      case "prefault":
      case "nonoptional":
      case "readonly":
      case "catch":
        schema = def.innerType;
        break;
      case "pipe":
        schema = (def.in as z.core.$ZodTypes)._zod.def.type === "transform" ? def.out : def.in;
        break;
      case "lazy":
        schema = def.getter();
        break;
      default:
        return schema;
    }
  }
  return schema;
}

/** The alternatives a value may match: the options of a union, the sides of an intersection. */
function alternatives(schema: Schema): Schema[] {
  const inner = unwrap(schema);
  const def = (inner as z.core.$ZodTypes)._zod.def;
  if (def.type === "union") return def.options.flatMap(alternatives);
  if (def.type === "intersection") return [...alternatives(def.left), ...alternatives(def.right)];
  return [inner];
}

/** The schemas that check the value at `path` below `schema` (several when unions are crossed). */
function schemasAt(schema: Schema, path: readonly PropertyKey[]): Schema[] {
  let current = alternatives(schema);
  for (const segment of path) {
    const next: Schema[] = [];
    for (const candidate of current) {
      const def = (candidate as z.core.$ZodTypes)._zod.def;
      if (def.type === "object" && typeof segment === "string") {
        const child = def.shape[segment] ?? def.catchall;
        if (child) next.push(...alternatives(child));
      } else if (def.type === "array" && typeof segment === "number") {
        next.push(...alternatives(def.element));
      } else if (def.type === "tuple" && typeof segment === "number") {
        const child = def.items[segment] ?? def.rest;
        if (child) next.push(...alternatives(child));
      } else if (def.type === "record") {
        next.push(...alternatives(def.valueType));
      }
    }
    current = next;
  }
  return current;
}

/** The keys the object at `path` accepts; empty when no object schema is found there. */
export function knownKeysAt(schema: Schema, path: readonly PropertyKey[]): string[] {
  const keys = new Set<string>();
  for (const candidate of schemasAt(schema, path)) {
    const def = (candidate as z.core.$ZodTypes)._zod.def;
    if (def.type === "object") for (const key of Object.keys(def.shape)) keys.add(key);
  }
  return [...keys];
}

/**
 * Every object key the schema accepts, with the path of the object it belongs to (`[]` for
 * the top level, `["pools", "[]"]` for the items of `pools`). Used to say where a key that is
 * valid elsewhere belongs.
 */
export function keyLocations(schema: Schema): { key: string; parent: string[] }[] {
  const found: { key: string; parent: string[] }[] = [];
  const seen = new Set<Schema>();
  const visit = (node: Schema, parent: string[]) => {
    for (const candidate of alternatives(node)) {
      if (seen.has(candidate)) continue;
      seen.add(candidate);
      const def = (candidate as z.core.$ZodTypes)._zod.def;
      if (def.type === "object") {
        for (const [key, child] of Object.entries(def.shape)) {
          found.push({ key, parent });
          visit(child, [...parent, key]);
        }
      } else if (def.type === "array") {
        visit(def.element, [...parent, "[]"]);
      } else if (def.type === "record") {
        visit(def.valueType, [...parent, "*"]);
      }
    }
  };
  visit(schema, []);
  return found;
}

/**
 * The message for an unknown key at `path`: a near spelling at the same level, else the place
 * where a key of exactly that name (modulo case, `_`, `-`) is accepted.
 */
export function unknownKeyMessage(schema: Schema, path: readonly PropertyKey[], key: string): string {
  const near = suggest(key, knownKeysAt(schema, path));
  if (near !== undefined) return `unknown key, did you mean '${near}'?`;
  const elsewhere = keyLocations(schema).find((entry) => normalize(entry.key) === normalize(key));
  if (elsewhere !== undefined) {
    const where =
      elsewhere.parent.length === 0 ? "at the top level" : `under '${formatKeyPath(elsewhere.parent)}'`;
    return `unknown key here ('${elsewhere.key}' belongs ${where})`;
  }
  return "unknown key";
}

/**
 * The message for an unknown field of a request body at `path`: a near spelling, and every
 * field the object there takes, so a caller never has to look them up.
 */
export function unknownFieldMessage(schema: Schema, path: readonly PropertyKey[], key: string): string {
  const fields = knownKeysAt(schema, path);
  if (fields.length === 0) return "unknown field";
  const near = suggest(key, fields);
  return `unknown field${near === undefined ? "" : `, did you mean '${near}'?`} (the fields are ${fields.join(", ")})`;
}

/** `["pools", 0, "minIdle"]` -> `pools[0].minIdle`; keyLocations' `[]` and `*` print as `[]` and `.<name>`. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (segment === "[]") text += "[]";
    else if (segment === "*") text += ".<name>";
    else {
      const name = String(segment);
      text += /^[A-Za-z_$][\w$-]*$/.test(name)
        ? text === ""
          ? name
          : `.${name}`
        : `[${JSON.stringify(name)}]`;
    }
  }
  return text;
}
