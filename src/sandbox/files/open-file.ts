/**
 * GetFile: a confined, existing regular file, opened before anything is answered (so a file
 * code in the sandbox made unreadable is a 4xx, not a stream that breaks after a 200) and
 * streamed from that open handle, with its media type. Opened without blocking and without
 * following a last-moment symlink: a FIFO put there would hold the open forever.
 */
import { constants, type ReadStream } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import { SandpoolError } from "../../contract/error-codes.js";
import { confinePath } from "./confine-path.js";
import { mediaTypeOf } from "./media-type.js";

export interface OpenedFile {
  stream: ReadStream;
  size: number;
  mimeType: string;
  name: string;
}

export async function openFile(workspace: string, requested: string): Promise<OpenedFile> {
  const target = await confinePath(workspace, requested);
  if (!target.exists) throw new SandpoolError("file.not_found", "no such file");
  const handle = await open(
    target.absolute,
    constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW,
  );
  try {
    const stats = await handle.stat();
    if (stats.isDirectory())
      throw new SandpoolError("file.is_directory", "the path is a directory, not a file");
    if (!stats.isFile()) throw new SandpoolError("file.not_found", "no such file");
    const name = path.basename(target.absolute);
    const mimeType = (await mediaTypeOf(name)) ?? "application/octet-stream";
    // The stream owns the handle from here and closes it when it ends or is destroyed.
    return { stream: handle.createReadStream({ autoClose: true }), size: stats.size, mimeType, name };
  } catch (error) {
    await handle.close();
    throw error;
  }
}
