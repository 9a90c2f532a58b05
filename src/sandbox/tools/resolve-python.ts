/**
 * Finds the real executable behind the configured Python command. Version managers put
 * shell-script shims on PATH that cost half a second per start; asking Python itself for
 * `sys.executable` once lets every interpreter after that start directly.
 *
 * When the command found on PATH is a program already (an ELF file, not a script), that path
 * is what Python would answer, and asking costs a Python start (tens of ms of CPU at every
 * sandbox's start): the path is used as found, never resolved further (a virtual
 * environment's `bin/python` is a symlink that must stay one).
 */
import { execFile } from "node:child_process";
import { closeSync, openSync, readSync, statSync } from "node:fs";
import path from "node:path";
import { CodeLauncher } from "../user-code/code-user.js";

/** Asked as user code when the sandbox server has a code user, like every program it starts. */
export function resolvePythonExecutable(command: string, launcher = new CodeLauncher()): Promise<string> {
  const binary = binaryOnPath(command);
  if (binary) return Promise.resolve(binary);
  const { file, args } = launcher.command(command, ["-c", "import sys; print(sys.executable)"]);
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000 }, (error, stdout) => {
      const executable = stdout.trim();
      resolve(error || executable === "" ? command : executable);
    });
  });
}

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

/**
 * The first executable file named `command` on PATH (as exec would find it), when it is an
 * ELF program; undefined for a script (a shim), a name with a slash, or anything unreadable.
 */
export function binaryOnPath(command: string, searchPath = process.env.PATH ?? ""): string | undefined {
  if (command.includes("/") || command === "") return undefined;
  for (const dir of searchPath.split(":")) {
    // A relative entry (or an empty one: the working directory) is left to Python to judge.
    if (!path.isAbsolute(dir)) return undefined;
    const candidate = path.join(dir, command);
    try {
      const stats = statSync(candidate);
      if (!stats.isFile() || (stats.mode & 0o111) === 0) continue;
    } catch {
      continue;
    }
    // The first executable match is what exec runs: a script there means ask Python.
    return isElf(candidate) ? candidate : undefined;
  }
  return undefined;
}

function isElf(file: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const head = Buffer.alloc(4);
    return readSync(fd, head, 0, 4, 0) === 4 && head.equals(ELF_MAGIC);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
