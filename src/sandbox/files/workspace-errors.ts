/**
 * A file operation's file system errors as the caller's 4xx. Code in the sandbox owns the
 * workspace and may change it at any moment (delete, chmod, replace what an operation is
 * looking at, fill the disk), so such an error is the tenant's doing, answered with a clear
 * message, never a 5xx. Anything else (a fault of the server's own) passes through.
 */
import { SandpoolError } from "../../contract/error-codes.js";

export function asWorkspaceError(error: unknown): unknown {
  if (error instanceof SandpoolError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const refused = (errorCode: ConstructorParameters<typeof SandpoolError>[0], message: string) =>
    new SandpoolError(errorCode, message, { cause: error });
  switch (code) {
    case "ENOENT":
    case "ENOTDIR":
      return refused(
        "file.not_found",
        "no such file or directory (code in the sandbox may have just removed it)",
      );
    case "EACCES":
    case "EPERM":
      return refused(
        "path.invalid",
        "permission denied: code in the sandbox took away the permissions of this path or of a directory above it",
      );
    case "ELOOP":
      return refused("path.invalid", "the path goes through too many symbolic links");
    case "ENAMETOOLONG":
      return refused("path.invalid", "the path or one of its names is too long");
    case "EISDIR":
      return refused("file.is_directory", "the path is a directory");
    case "EEXIST":
      return refused("path.invalid", "something else was put at this path meanwhile");
    case "ENOSPC":
    case "EDQUOT":
      return refused("file.too_large", "no space left in the sandbox's workspace");
    default:
      return error;
  }
}
