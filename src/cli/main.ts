#!/usr/bin/env node
/**
 * The `sandpool` command. Each sub-command imports its implementation only when run, so
 * `sandpool sandbox` (the program in every pooled container) starts without loading the
 * gateway.
 */
import { Command } from "commander";
import { devCommand } from "./commands/dev-command.js";
import { sandboxCommand } from "./commands/sandbox-command.js";
import { tokenCommand } from "./commands/token-command.js";

const program = new Command("sandpool")
  .description("A multi-tenant, pool-backed gateway for the Otari code-execution protocol (contract v1).")
  .version("0.1.0")
  .showHelpAfterError()
  .addCommand(devCommand())
  .addCommand(tokenCommand())
  .addCommand(sandboxCommand());

await program.parseAsync(process.argv);
