/**
 * Finds the real executable behind the configured Python command. Version managers put
 * shell-script shims on PATH that cost half a second per start; asking Python itself for
 * `sys.executable` once lets every interpreter after that start directly.
 */
import { execFile } from "node:child_process";
import { CodeLauncher } from "../user-code/code-user.js";

/** Asked as user code when the sandbox server has a code user, like every program it starts. */
export function resolvePythonExecutable(command: string, launcher = new CodeLauncher()): Promise<string> {
  const { file, args } = launcher.command(command, ["-c", "import sys; print(sys.executable)"]);
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000 }, (error, stdout) => {
      const executable = stdout.trim();
      resolve(error || executable === "" ? command : executable);
    });
  });
}
