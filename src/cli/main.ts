#!/usr/bin/env node
/**
 * The `sandpool` command. Each sub-command imports its implementation only when run, so
 * `sandpool sandbox` (the program in every pooled container) starts without loading the
 * gateway.
 */
import { Command } from "commander";
import { SANDPOOL_VERSION } from "../version.js";
import { auditCommand } from "./commands/audit-command.js";
import { configCommand } from "./commands/config-command.js";
import { devCommand } from "./commands/dev-command.js";
import { explainCommand } from "./commands/explain-command.js";
import { keysCommand } from "./commands/keys-command.js";
import { migrateCommand } from "./commands/migrate-command.js";
import { nodesCommand } from "./commands/nodes-command.js";
import { openapiCommand } from "./commands/openapi-command.js";
import { policyCommand } from "./commands/policy-command.js";
import { poolsCommand } from "./commands/pools-command.js";
import { sandboxCommand } from "./commands/sandbox-command.js";
import { secretsCommand } from "./commands/secrets-command.js";
import { serveCommand } from "./commands/serve-command.js";
import { sessionsCommand } from "./commands/sessions-command.js";
import { tokenCommand } from "./commands/token-command.js";
import { usageCommand } from "./commands/usage-command.js";
import { verifyCommand } from "./commands/verify-command.js";

const program = new Command("sandpool")
  .description("A multi-tenant, pool-backed gateway for the Otari code-execution protocol (contract v1).")
  .version(SANDPOOL_VERSION)
  .showHelpAfterError()
  .addCommand(devCommand())
  .addCommand(serveCommand())
  .addCommand(tokenCommand())
  .addCommand(policyCommand())
  .addCommand(usageCommand())
  .addCommand(sessionsCommand())
  .addCommand(poolsCommand())
  .addCommand(nodesCommand())
  .addCommand(keysCommand())
  .addCommand(secretsCommand())
  .addCommand(auditCommand())
  .addCommand(explainCommand())
  .addCommand(verifyCommand())
  .addCommand(migrateCommand())
  .addCommand(configCommand())
  .addCommand(openapiCommand())
  .addCommand(sandboxCommand());

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Expected failures (bad configuration, a missing service) read as one line, not a stack.
  process.stderr.write(`sandpool: ${error instanceof Error ? error.message : String(error)}\n`);
  if (process.env.SANDPOOL_LOG_LEVEL === "debug" && error instanceof Error)
    process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
}
