/**
 * `sandpool token`: mints a dev-mode bearer token for any workspace, or an admin token; with
 * --json, an object a program reads (the token and what it carries).
 */
import { Command } from "commander";
import { printJson } from "../admin/admin-render.js";
import { integerOption } from "../parse-number.js";

interface TokenOptions {
  workspace?: string;
  admin?: boolean;
  dataDir: string;
  ttl: number;
  subject: string;
  json?: boolean;
}

/** Shorter lifetimes would expire between printing a token and pasting it. */
const MIN_TTL_SECONDS = 60;

/**
 * The default subject is dev-keys.ts's DEV_USER_SUBJECT, as the `sandpool dev` banner's token has
 * (not imported: the CLI loads a command's modules, jose among them, only when it runs).
 */
export function tokenCommand(): Command {
  return new Command("token")
    .summary("print a dev-mode bearer token for a workspace (or an admin token)")
    .description(
      "Print a bearer token for a workspace, signed with the key `sandpool dev` keeps in its data\n" +
        "directory. Dev mode only: production tokens come from your identity provider.\n" +
        "A token lasts 24 h unless --ttl says otherwise; once it has expired the gateway answers\n" +
        "401 auth.expired: mint another.",
    )
    .option("--workspace <id>", "the workspace (tenant) the token is for")
    .option("--admin", "an admin token, for the admin API and `sandpool policy` (workspace optional)")
    .option("--data-dir <dir>", "the dev data directory", ".sandpool/dev")
    .option(
      "--ttl <seconds>",
      `lifetime of the token in seconds, ${MIN_TTL_SECONDS} or more (86400 is 24 h)`,
      integerOption(MIN_TTL_SECONDS),
      86_400,
    )
    .option("--subject <sub>", "the token's subject (audit names it as who)", "dev-user")
    .option("--json", "print an object: token, workspace, admin, subject, expiresAt")
    .addHelpText(
      "after",
      "\nExamples:\n  sandpool token --workspace team-a\n  sandpool token --admin --subject ops@example.com\n" +
        "  sandpool token --workspace team-a --json\n",
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
      if (!options.json) {
        process.stdout.write(`${token}\n`);
        return;
      }
      const { decodeJwt } = await import("jose");
      const { exp } = decodeJwt(token);
      printJson({
        token,
        workspace: options.workspace ?? null,
        admin: options.admin === true,
        subject: options.subject,
        expiresAt: exp === undefined ? null : new Date(exp * 1000).toISOString(),
      });
    });
}
