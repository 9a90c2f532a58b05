/**
 * ListFiles: the entries of one workspace directory (or, with `recursive`, of its whole
 * subtree), each with its workspace-relative path. Symlinks are followed only when they
 * stay inside the workspace; the rest are left out rather than described.
 */
import type { Dirent } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { SandpoolError } from "../../contract/error-codes.js";
import type { FileMetadata } from "../../contract/schemas.js";
import { confinePath, isInside } from "./confine-path.js";
import { mediaTypeOf } from "./media-type.js";

export const MAX_LISTED_ENTRIES = 10_000;

export interface FileListing {
  files: (FileMetadata & { type: "file" | "directory" })[];
  truncated: boolean;
}

export async function listFiles(
  workspace: string,
  requested: string,
  recursive: boolean,
): Promise<FileListing> {
  const target = await confinePath(workspace, requested);
  const stats = target.exists ? await stat(target.absolute) : undefined;
  if (!stats?.isDirectory()) throw new SandpoolError("file.not_found", "no such directory");

  const listing: FileListing = { files: [], truncated: false };
  const pending = [target.absolute];
  while (pending.length > 0) {
    const dir = pending.shift()!;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (listing.files.length >= MAX_LISTED_ENTRIES) {
        listing.truncated = true;
        return listing;
      }
      const absolute = path.join(dir, entry.name);
      const described = await describe(workspace, absolute, entry);
      if (!described) continue;
      listing.files.push(described);
      if (recursive && described.type === "directory" && !entry.isSymbolicLink()) pending.push(absolute);
    }
  }
  return listing;
}

async function describe(
  workspace: string,
  absolute: string,
  entry: Dirent,
): Promise<(FileMetadata & { type: "file" | "directory" }) | undefined> {
  if (entry.isSymbolicLink()) {
    const target = await realpath(absolute).catch(() => undefined);
    if (!target || !isInside(workspace, target)) return undefined;
  }
  const stats = await stat(absolute).catch(() => undefined);
  if (!stats || !(stats.isFile() || stats.isDirectory())) return undefined;
  const relative = path.relative(workspace, absolute);
  const directory = stats.isDirectory();
  return {
    path: relative,
    size_bytes: directory ? 0 : stats.size,
    mime_type: directory ? null : ((await mediaTypeOf(entry.name)) ?? null),
    modified_at: stats.mtimeMs / 1000,
    type: directory ? "directory" : "file",
  };
}
