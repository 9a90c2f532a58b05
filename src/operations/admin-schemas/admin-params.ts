/**
 * The path and query parameters of the admin API, as schemas the operations declare
 * (src/operations/admin-operations.ts). A query value arrives as a string and is admitted as
 * a string: these schemas check it and say what is wrong in a sentence that names the
 * parameter (the binding shows that sentence as it is); the handler reads the checked value
 * with `instantOf` or `Number`. An empty value (`?limit=`) is as good as none, except where a
 * parameter says otherwise. Nothing here is HTTP: the OpenAPI generator loads it offline.
 */
import { z } from "zod";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { parseIsoInstant } from "../../contract/iso-instant.js";

const WORKSPACE_ID_RULE = "letters, digits, . _ : -; 128 at most, starting with a letter or digit";
/** The range an instant may name: Postgres has no year 0, and before 1970 nothing was recorded. */
const EARLIEST_DATE_MS = 0;
const LATEST_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** What the OpenAPI document says of a parameter: the check's rule, as JSON Schema words. */
interface ParamDoc {
  description: string;
  enum?: readonly string[];
  pattern?: string;
}

/** A string parameter checked by `problem`, which answers what is wrong with a value, if anything. */
function checked(problem: (value: string) => string | undefined, doc: ParamDoc) {
  return z
    .string()
    .superRefine((value, ctx) => {
      const found = problem(value);
      if (found !== undefined) ctx.addIssue({ code: "custom", message: found });
    })
    .meta({ ...doc });
}

/** Optional: absent or empty means "not given" (the handler's default applies). */
function omittable(problem: (value: string) => string | undefined, doc: ParamDoc) {
  return checked((value) => (value === "" ? undefined : problem(value)), doc).optional();
}

const workspaceDoc = (description: string): ParamDoc => ({ description, pattern: workspaceIdPattern.source });

/** `{ws}` of `/workspaces/{ws}/...`. */
export const workspacePathParams = z.object({
  ws: checked(
    (value) =>
      workspaceIdPattern.test(value) ? undefined : `not a valid workspace id (${WORKSPACE_ID_RULE})`,
    workspaceDoc("A workspace id."),
  ),
});

/** One named path segment taken as it is (a pool name, a node id, a key prefix, a session id). */
export function pathParams<Name extends string>(name: Name, description: string) {
  return z.object({ [name]: z.string().meta({ description }) } as Record<Name, z.ZodString>);
}

/** `?workspace=`: the workspace an operator's listing narrows to. */
export const workspaceFilter = omittable(
  (value) =>
    workspaceIdPattern.test(value)
      ? undefined
      : `workspace is not a valid workspace id (${WORKSPACE_ID_RULE})`,
  workspaceDoc("Only this workspace's."),
);

/** `?workspace=` that must be given: a report is one workspace's. */
const WORKSPACE_REQUIRED = "workspace is required (?workspace=<id>): a report covers one workspace";
export const requiredWorkspace = z
  .string({ error: WORKSPACE_REQUIRED })
  .superRefine((value, ctx) => {
    if (value === "") ctx.addIssue({ code: "custom", message: WORKSPACE_REQUIRED });
    else if (!workspaceIdPattern.test(value))
      ctx.addIssue({
        code: "custom",
        message: `workspace is not a valid workspace id (${WORKSPACE_ID_RULE})`,
      });
  })
  .meta({ ...workspaceDoc("The workspace reported on.") });

/** A whole number from `min` to `max`. */
export function wholeNumber(name: string, min: number, max: number, description: string) {
  return omittable(
    (value) => {
      const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN;
      return parsed >= min && parsed <= max
        ? undefined
        : `${name} must be a whole number from ${min} to ${max}`;
    },
    { description: `${description} From ${min} to ${max}.`, pattern: "^[0-9]+$" },
  );
}

/** An instant: a UTC day or a date-time with its zone (src/contract/iso-instant.ts says why). */
export function instant(name: string, description: string) {
  return omittable(
    (value) => {
      const parsed = parseIsoInstant(value);
      if (!parsed.ok) return `${name}: ${parsed.reason}`;
      const ms = parsed.date.getTime();
      return ms < EARLIEST_DATE_MS || ms > LATEST_DATE_MS
        ? `${name} must lie between 1970 and 9999, got '${value}'`
        : undefined;
    },
    { description: `${description} A date (YYYY-MM-DD, UTC) or a date-time with Z or an offset.` },
  );
}

/**
 * One of a few words. `emptyIsAbsent`: `?kind=` reads as no filter; without it, `?by=` is
 * refused like any other wrong word (no default hides a typo).
 */
export function oneOf<const Word extends string>(
  name: string,
  words: readonly Word[],
  description: string,
  options: { emptyIsAbsent?: boolean } = {},
): z.ZodOptional<z.ZodType<Word | "", string>> {
  const problem = (value: string) =>
    (words as readonly string[]).includes(value)
      ? undefined
      : `${name} must be ${words.join(" or ")}, got '${value}'`;
  const doc = { description, enum: words };
  // The check admits only the words (and "" where that means absent): the handler reads one of them.
  const schema = options.emptyIsAbsent ? omittable(problem, doc) : checked(problem, doc).optional();
  return schema as unknown as z.ZodOptional<z.ZodType<Word | "", string>>;
}

/** `true` or `false`; absent is false. */
export function flag(name: string, description: string) {
  return checked(
    (value) => (value === "true" || value === "false" ? undefined : `${name} must be true or false`),
    { description, enum: ["true", "false"] },
  ).optional();
}

/** A checked instant parameter as a Date; undefined when it was not given. */
export function instantOf(value: string | undefined): Date | undefined {
  if (value === undefined || value === "") return undefined;
  const parsed = parseIsoInstant(value);
  if (!parsed.ok) throw new Error(`instantOf: '${value}' was not admitted: ${parsed.reason}`);
  return parsed.date;
}

/** A checked optional parameter, or undefined when it was absent or empty. */
export function given<Value extends string>(value: Value | undefined): Exclude<Value, ""> | undefined {
  return value === undefined || value === "" ? undefined : (value as Exclude<Value, "">);
}
