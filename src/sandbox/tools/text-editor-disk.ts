/**
 * The text editor's disk side: reading a workspace file as UTF-8 text with the editor's
 * refusals (not a regular file, too large, binary, not UTF-8), writing one atomically
 * without changing its mode, and listing a directory two levels deep. Paths given here
 * are already confined to the workspace.
 */
import { randomUUID } from "node:crypto";
import { chmod, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { EditorError } from "./text-editor-format.js";

// fatal: editing a file that is not UTF-8 would silently replace its bytes with U+FFFD.
// ignoreBOM: keep a byte-order mark in the text, so it is written back.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Beyond this, a directory listing stops: a huge tree would flood the model's context. */
const MAX_LISTED_ENTRIES = 1000;

export async function readText(absolute: string, shown: string, maxBytes: number): Promise<string> {
  const stats = await stat(absolute);
  if (stats.isDirectory()) throw new EditorError(`The path ${shown} is a directory, not a file.`);
  // Checked before reading: a FIFO or a device would block or never end.
  if (!stats.isFile()) throw new EditorError(`The path ${shown} is not a regular file.`);
  if (stats.size > maxBytes) {
    throw new EditorError(
      `File ${shown} is ${stats.size} bytes, above the editor's limit of ${maxBytes} bytes.`,
    );
  }
  const bytes = await readFile(absolute);
  if (bytes.includes(0)) {
    throw new EditorError(
      `File ${shown} is binary (it contains NUL bytes); the editor handles UTF-8 text only.`,
    );
  }
  try {
    return utf8.decode(bytes);
  } catch {
    throw new EditorError(`File ${shown} is not valid UTF-8 text; the editor handles UTF-8 text only.`);
  }
}

/**
 * Replaces the file's content in one step (a temporary sibling renamed over it), so user
 * code reading it concurrently sees the old or the new content, never half of it. The file's
 * permission bits are carried over; a new file gets the default ones.
 */
export async function writeAtomic(absolute: string, text: string): Promise<void> {
  const mode = await stat(absolute).then(
    (stats) => stats.mode & 0o7777,
    () => undefined,
  );
  // Short and hidden: the target's own name could already be near NAME_MAX.
  const temporary = path.join(path.dirname(absolute), `.${randomUUID()}.sandpool-edit`);
  try {
    await writeFile(temporary, text, { flag: "wx" });
    if (mode !== undefined) await chmod(temporary, mode);
    await rename(temporary, absolute);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Files and directories up to two levels below `absolute`, hidden ones (and what is under
 * them) left out, one path per line relative to the workspace, directories with a trailing
 * "/". Symlinks are listed, never followed, so a link cannot expose what lies outside.
 */
export async function listTree(absolute: string, relative: string): Promise<string[]> {
  const entries: string[] = [];
  let truncated = false;
  const walk = async (directory: string, prefix: string, depthLeft: number): Promise<void> => {
    const children = await readdir(directory, { withFileTypes: true });
    children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      if (child.name.startsWith(".")) continue;
      if (entries.length >= MAX_LISTED_ENTRIES) {
        truncated = true;
        return;
      }
      const name = prefix === "." ? child.name : `${prefix}/${child.name}`;
      if (!child.isDirectory()) {
        entries.push(name);
        continue;
      }
      entries.push(`${name}/`);
      // An unreadable subdirectory is shown without its content rather than failing the view.
      if (depthLeft > 1)
        await walk(path.join(directory, child.name), name, depthLeft - 1).catch(() => undefined);
    }
  };
  await walk(absolute, relative, 2);
  if (truncated) entries.push(`(listing stopped at ${MAX_LISTED_ENTRIES} entries)`);
  return entries;
}
