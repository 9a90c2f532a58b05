/**
 * Maps a client-supplied path onto a session's workspace, refusing anything that could
 * leave it: absolute paths, `..` segments, backslashes, NUL and control characters, and
 * symlinks (anywhere along the path) whose target lies outside. The check runs on the real
 * path of the deepest existing ancestor, so a link planted by user code cannot redirect a
 * read or a write.
 */
import { lstat, realpath } from "node:fs/promises";
import path from "node:path";
import { SandpoolError } from "../../contract/error-codes.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const FORBIDDEN_CHARACTERS = /[\u0000-\u001f\u007f\\]/;

export interface ConfinedPath {
  /** Absolute, symlink-free location on disk. */
  absolute: string;
  /** The same location relative to the workspace root, `.` for the root itself. */
  relative: string;
  exists: boolean;
}

function refuse(requested: string): never {
  throw new SandpoolError(
    "path.outside_workspace",
    `path '${printable(requested)}' is outside the session workspace`,
  );
}

function printable(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

/** Syntactic checks: the part that needs no disk access. Returns the normalized segments. */
export function relativeSegments(requested: string): string[] {
  if (FORBIDDEN_CHARACTERS.test(requested) || path.posix.isAbsolute(requested)) refuse(requested);
  const segments = requested.split("/").filter((segment) => segment !== "" && segment !== ".");
  if (segments.some((segment) => segment === "..")) refuse(requested);
  return segments;
}

/**
 * Resolves `requested` inside `workspaceReal` (which must itself be a real path).
 * Missing trailing components are allowed: the result then names where a write would go.
 */
export async function confinePath(workspaceReal: string, requested: string): Promise<ConfinedPath> {
  const segments = relativeSegments(requested);
  let current = workspaceReal;
  for (let index = 0; index < segments.length; index++) {
    const candidate = path.join(current, segments[index]!);
    const stats = await lstat(candidate).catch(() => undefined);
    if (!stats) {
      // Joined first, not spread: a path of a million segments would overflow the call stack.
      const absolute = path.join(candidate, segments.slice(index + 1).join("/"));
      return { absolute, relative: path.relative(workspaceReal, absolute), exists: false };
    }
    current = stats.isSymbolicLink() ? await realpath(candidate).catch(() => refuse(requested)) : candidate;
    if (!isInside(workspaceReal, current)) refuse(requested);
  }
  return { absolute: current, relative: path.relative(workspaceReal, current) || ".", exists: true };
}

export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (relative !== ".." && !relative.startsWith("../") && !path.isAbsolute(relative));
}
