/** `sandpool token`: mints a dev-mode bearer token for any workspace. */
import { Command } from "commander";
import { integerOption } from "../parse-number.js";

export function tokenCommand(): Command {
  return new Command("token")
    .summary("print a dev-mode bearer token for a workspace")
    .description(
      "Print a bearer token for a workspace, signed with the key `sandpool dev` keeps in its data\n" +
        "directory. Dev mode only: production tokens come from your identity provider.",
    )
    .requiredOption("--workspace <id>", "the workspace (tenant) the token is for")
    .option("--data-dir <dir>", "the dev data directory", ".sandpool/dev")
    .option("--ttl <seconds>", "lifetime of the token", integerOption(60), 86_400)
    .option("--subject <sub>", "the token's subject", "dev-user")
    .action(async (options: { workspace: string; dataDir: string; ttl: number; subject: string }) => {
      const { loadOrCreateDevKey, mintToken } = await import("../../auth/dev-keys.js");
      const { workspaceIdPattern } = await import("../../auth/workspace-claim.js");
      if (!workspaceIdPattern.test(options.workspace)) {
        throw new Error(
          `'${options.workspace}' is not a valid workspace id (letters, digits, . _ : -; 128 at most)`,
        );
      }
      const { secret } = await loadOrCreateDevKey(options.dataDir);
      const token = await mintToken({
        secret,
        workspace: options.workspace,
        ttlSeconds: options.ttl,
        subject: options.subject,
      });
      process.stdout.write(`${token}\n`);
    });
}
