/** GetFile: a confined, existing regular file, opened for streaming with its media type. */
import { createReadStream, type ReadStream } from "node:fs";
import { stat } from "node:fs/promises";
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
  const stats = target.exists ? await stat(target.absolute).catch(() => undefined) : undefined;
  if (!stats) throw new SandpoolError("file.not_found", "no such file");
  if (stats.isDirectory())
    throw new SandpoolError("file.is_directory", "the path is a directory, not a file");
  if (!stats.isFile()) throw new SandpoolError("file.not_found", "no such file");
  const name = path.basename(target.absolute);
  return {
    stream: createReadStream(target.absolute),
    size: stats.size,
    mimeType: (await mediaTypeOf(name)) ?? "application/octet-stream",
    name,
  };
}
