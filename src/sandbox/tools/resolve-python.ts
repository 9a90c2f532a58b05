/**
 * Finds the real executable behind the configured Python command. Version managers put
 * shell-script shims on PATH that cost half a second per start; asking Python itself for
 * `sys.executable` once lets every interpreter after that start directly.
 */
import { execFile } from "node:child_process";

export function resolvePythonExecutable(command: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(command, ["-c", "import sys; print(sys.executable)"], { timeout: 10_000 }, (error, stdout) => {
      const executable = stdout.trim();
      resolve(error || executable === "" ? command : executable);
    });
  });
}
