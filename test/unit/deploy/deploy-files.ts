/**
 * Reading the deployment artifacts (docker-compose.yml, deploy/, helm/) for the deploy tests:
 * paths from the repository root, YAML that must parse cleanly, and compose-style variable
 * interpolation, so a test sees the values compose would hand a container.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseDocument } from "yaml";

export const repoRoot = path.resolve(fileURLToPath(new URL("../../../", import.meta.url)));

export function repoPath(...parts: string[]): string {
  return path.join(repoRoot, ...parts);
}

export function readText(relative: string): string {
  return readFileSync(repoPath(relative), "utf8");
}

/** The YAML file as plain data; duplicate keys and syntax errors fail the test. */
export function readYaml<T = unknown>(relative: string): T {
  const document = parseDocument(readText(relative), { uniqueKeys: true, prettyErrors: true });
  if (document.errors.length > 0) throw new Error(`${relative}: ${document.errors[0]!.message}`);
  return document.toJS({ maxAliasCount: 100 }) as T;
}

export function readJson<T = unknown>(relative: string): T {
  return JSON.parse(readText(relative)) as T;
}

/**
 * Compose's interpolation of one string: `$$`, `$NAME`, `${NAME}`, `${NAME:-default}`,
 * `${NAME-default}`, `${NAME:?message}` and `${NAME?message}` (which throw when unset).
 */
export function interpolate(value: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_]\w*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_]\w*)/g,
    (match, braced?: string, operator?: string, argument?: string, bare?: string) => {
      if (match === "$$") return "$";
      const name = (braced ?? bare)!;
      const current = env[name];
      const missing = operator?.startsWith(":") ? !current : current === undefined;
      if (operator?.endsWith("-")) return missing ? argument! : current!;
      if (operator?.endsWith("?")) {
        if (missing) throw new Error(`${name} must be set: ${argument}`);
        return current!;
      }
      return current ?? "";
    },
  );
}

/** Every string in `value` interpolated (see interpolate). */
export function interpolateAll<T>(value: T, env: Readonly<Record<string, string | undefined>>): T {
  if (typeof value === "string") return interpolate(value, env) as T;
  if (Array.isArray(value)) return value.map((item) => interpolateAll(item, env)) as T;
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateAll(item, env)]),
    ) as T;
  return value;
}

/** A Go duration as compose writes them (`45s`, `1m30s`, `500ms`), in milliseconds. */
export function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join("") !== text)
    throw new Error(`not a duration: '${text}'`);
  return parts.reduce((total, part) => total + Number(part[1]) * units[part[2]!]!, 0);
}
