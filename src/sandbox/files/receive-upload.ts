/**
 * PutFile: streams one multipart `file` part to a private temporary file, then moves it
 * into the workspace in one rename. A file over the cap is refused (413) and nothing is
 * left behind; the destination never holds a partial file.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import busboy from "busboy";
import { SandpoolError } from "../../contract/error-codes.js";
import type { FileUploadResult } from "../../contract/schemas.js";
import { confinePath, relativeSegments } from "./confine-path.js";

export interface UploadTarget {
  workspace: string;
  /** A directory outside the workspace, on the same file system, for partial uploads. */
  uploadDir: string;
  maxBytes: number;
}

/** Room for multipart boundaries and part headers on top of the file itself. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

interface ReceivedPart {
  tempPath: string;
  size: number;
  filename: string | undefined;
  tooLarge: boolean;
}

export async function receiveUpload(
  target: UploadTarget,
  headers: Record<string, string>,
  body: Readable,
): Promise<FileUploadResult> {
  const declared = Number(headers["content-length"]);
  if (Number.isFinite(declared) && declared > target.maxBytes + MULTIPART_OVERHEAD_BYTES) {
    body.resume();
    throw tooLarge(target.maxBytes);
  }
  if (!/^multipart\/form-data/i.test(headers["content-type"] ?? "")) {
    body.resume();
    throw new SandpoolError("request.bad_content_type", "PutFile takes multipart/form-data");
  }
  const { part, fields } = await parseMultipart(target, headers, body);
  try {
    if (!part) throw new SandpoolError("request.malformed", "the multipart body has no 'file' part");
    if (part.tooLarge) throw tooLarge(target.maxBytes);
    const requested = fields.get("path") || part.filename;
    if (!requested)
      throw new SandpoolError("request.malformed", "no 'path' field and no file name to derive one from");
    let destination = await confinePath(target.workspace, requested);
    if (destination.exists && (await stat(destination.absolute)).isDirectory()) {
      if (!part.filename) throw new SandpoolError("file.is_directory", "the path is a directory");
      relativeSegments(part.filename);
      destination = await confinePath(
        target.workspace,
        path.join(destination.relative, path.basename(part.filename)),
      );
      if (destination.exists && (await stat(destination.absolute)).isDirectory()) {
        throw new SandpoolError("file.is_directory", "the path is a directory");
      }
    }
    try {
      await mkdir(path.dirname(destination.absolute), { recursive: true });
      await rename(part.tempPath, destination.absolute);
    } catch (error) {
      throw unwritablePath(error);
    }
    return { path: destination.relative, size_bytes: part.size };
  } finally {
    if (part) await rm(part.tempPath, { force: true });
  }
}

/** A path the file system cannot hold is the caller's mistake (400), not the server's (500). */
function unwritablePath(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENAMETOOLONG")
    return new SandpoolError("path.invalid", "the path or one of its names is too long", { cause: error });
  if (code === "ENOTDIR" || code === "EEXIST")
    return new SandpoolError("path.invalid", "a parent of the path is a file, not a directory", {
      cause: error,
    });
  if (code === "EISDIR")
    return new SandpoolError("file.is_directory", "the path is a directory", { cause: error });
  return error;
}

function tooLarge(maxBytes: number): SandpoolError {
  return new SandpoolError("file.too_large", `the file is larger than the ${maxBytes}-byte cap`);
}

function parseMultipart(
  target: UploadTarget,
  headers: Record<string, string>,
  body: Readable,
): Promise<{ part: ReceivedPart | undefined; fields: Map<string, string> }> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers,
        // One byte over the cap is enough to know the file is too large.
        limits: { fileSize: target.maxBytes + 1, files: 1, fields: 8, fieldSize: 4096, parts: 9 },
      });
    } catch (error) {
      // Refused before a byte is read: the rest is still drained, or the server closes this
      // keep-alive connection under the gateway's next call, which then ends the session (502).
      body.resume();
      reject(new SandpoolError("request.malformed", `bad multipart body: ${(error as Error).message}`));
      return;
    }
    const fields = new Map<string, string>();
    let part: ReceivedPart | undefined;
    let written: Promise<void> = Promise.resolve();
    parser.on("field", (name, value) => fields.set(name, value));
    parser.on("file", (name, stream, info) => {
      if (name !== "file" || part) {
        stream.resume();
        return;
      }
      const received: ReceivedPart = {
        tempPath: path.join(target.uploadDir, `upload-${randomBytes(8).toString("hex")}`),
        size: 0,
        filename: info.filename || undefined,
        tooLarge: false,
      };
      part = received;
      stream.on("data", (chunk: Buffer) => {
        received.size += chunk.length;
        if (received.size > target.maxBytes) received.tooLarge = true;
      });
      written = pipeline(stream, createWriteStream(received.tempPath, { mode: 0o644 }));
    });
    parser.on("error", (error: Error) => {
      body.unpipe(parser);
      body.resume();
      if (part) void rm(part.tempPath, { force: true });
      reject(new SandpoolError("request.malformed", `bad multipart body: ${error.message}`));
    });
    // The client went away mid-body (`aborted`): `pipe` passes no error on, and an
    // unhandled one would end the server. The upload is abandoned, its temporary file removed.
    body.once("error", (error: Error) => {
      body.unpipe(parser);
      parser.destroy();
      if (part) void rm(part.tempPath, { force: true });
      reject(new SandpoolError("request.malformed", `the upload was cut off: ${error.message}`));
    });
    parser.on("close", () => {
      written.then(
        () => resolve({ part, fields }),
        (error) => reject(error),
      );
    });
    body.pipe(parser);
  });
}
