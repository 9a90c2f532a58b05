/**
 * Entry point of the bundled sandbox image program: only the `sandbox` command, so the
 * bundle carries none of the gateway's dependencies.
 */
import { Command } from "commander";
import { sandboxCommand } from "./commands/sandbox-command.js";

await new Command("sandpool").addCommand(sandboxCommand()).parseAsync(process.argv);
