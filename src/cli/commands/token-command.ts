/** `sandpool token`: mints a dev-mode bearer token for any workspace, or an admin token. */
import { Command } from "commander";
import { integerOption } from "../parse-number.js";

interface TokenOptions {
  workspace?: string;
  admin?: boolean;
  dataDir: string;
  ttl: number;
  subject: string;
}

export function tokenCommand(): Command {
  return new Command("token")
    .summary("print a dev-mode bearer token for a workspace (or an admin token)")
    .description(
      "Print a bearer token for a workspace, signed with the key `sandpool dev` keeps in its data\n" +
        "directory. Dev mode only: production tokens come from your identity provider.",
    )
    .option("--workspace <id>", "the workspace (tenant) the token is for")
    .option("--admin", "an admin token, for the admin API and `sandpool policy` (workspace optional)")
    .option("--data-dir <dir>", "the dev data directory", ".sandpool/dev")
    .option("--ttl <seconds>", "lifetime of the token", integerOption(60), 86_400)
    .option("--subject <sub>", "the token's subject", "dev-user")
    .addHelpText(
      "after",
      "\nExamples:\n  sandpool token --workspace team-a\n  sandpool token --admin --subject ops@example.com\n",
    )
    .action(async (options: TokenOptions) => {
      const { loadOrCreateDevKey, mintToken } = await import("../../auth/dev-keys.js");
      const { workspaceIdPattern } = await import("../../auth/workspace-claim.js");
      if (options.workspace === undefined && !options.admin) {
        throw new Error("say which workspace the token is for (--workspace ID), or ask for --admin");
      }
      if (options.workspace !== undefined && !workspaceIdPattern.test(options.workspace)) {
        throw new Error(
          `'${options.workspace}' is not a valid workspace id (letters, digits, . _ : -; 128 at most)`,
        );
      }
      const { secret } = await loadOrCreateDevKey(options.dataDir);
      const token = await mintToken({
        secret,
        workspace: options.workspace,
        admin: options.admin === true,
        ttlSeconds: options.ttl,
        subject: options.subject,
      });
      process.stdout.write(`${token}\n`);
    });
}
