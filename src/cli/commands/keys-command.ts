/**
 * `sandpool keys`: workspace API keys through the gateway's admin API (`/admin/v1/keys`), with
 * an admin token (SANDPOOL_URL / SANDPOOL_ADMIN_TOKEN, or --url / --token). `create` prints the
 * key once (only its hash is stored); `list` never shows a secret; `revoke` ends a key on every
 * replica within a second. Exit codes: 0 done, 1 refused or unreachable, 2 bad usage.
 */
import { Command, InvalidArgumentError } from "commander";
import {
  adminCall,
  adminConnection,
  type ConnectionOptions,
  examples,
  out,
  printJson,
  runAdmin,
  table,
  withConnection,
  workspaceArgument,
} from "./policy-command.js";

const run = <A extends unknown[]>(action: (...args: A) => Promise<void>) => runAdmin("sandpool keys", action);

const EXPIRY = /^(\d+)\s*(m|h|d|w|y)$/i;
const UNIT_SECONDS: Record<string, number> = { m: 60, h: 3600, d: 86_400, w: 604_800, y: 31_536_000 };

/** `--expires 30d` (m, h, d, w, y) in seconds. */
export function expiresOption(value: string): number {
  const match = EXPIRY.exec(value.trim());
  if (!match)
    throw new InvalidArgumentError(`expected a duration such as 12h, 30d, 8w or 1y, got '${value}'`);
  return Number(match[1]) * UNIT_SECONDS[match[2]!.toLowerCase()]!;
}

function prefixArgument(value: string): string {
  if (!/^[0-9a-f]{12}$/.test(value))
    throw new InvalidArgumentError(`'${value}' is not a key prefix (the 12 hex characters after sp_)`);
  return value;
}

const when = (iso: string | null) => (iso === null ? "-" : iso.replace(/\.\d{3}Z$/, "Z"));

function createCommand(): Command {
  return withConnection(
    new Command("create")
      .summary("create a workspace API key (printed once)")
      .description(
        "Create an API key for a workspace. The key (sp_<prefix>_<secret>) is printed once and never " +
          "again: only its hash is stored. It authenticates like a token carrying its workspace.",
      )
      .requiredOption("--workspace <id>", "the workspace the key speaks for", workspaceArgument)
      .option("--name <name>", "a label to recognise the key by")
      .option(
        "--expires <duration>",
        "expire after this long (12h, 30d, 8w, 1y); default never",
        expiresOption,
      )
      .addHelpText(
        "after",
        examples(
          "sandpool keys create --workspace team-a --name ci --expires 90d",
          "sandpool keys create --workspace team-a --json",
        ),
      ),
  ).action(
    run(async (options: ConnectionOptions & { workspace: string; name?: string; expires?: number }) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "post", "/admin/v1/keys", {
        body: {
          workspace: options.workspace,
          ...(options.name === undefined ? {} : { name: options.name }),
          ...(options.expires === undefined ? {} : { expiresInSeconds: options.expires }),
        },
      });
      if (conn.json) return printJson(body);
      const created = body;
      out(created.key);
      process.stderr.write(
        `key ${created.prefix} for workspace ${created.workspace}` +
          `${created.expiresAt ? `, expires ${when(created.expiresAt)}` : ", never expires"}; ` +
          "store it now: it is not shown again\n",
      );
    }),
  );
}

function listCommand(): Command {
  return withConnection(
    new Command("list")
      .summary("list API keys (never their secrets)")
      .description(
        "List API keys, all or one workspace's, with when each was created, last used and expires.",
      )
      .option("--workspace <id>", "only this workspace's keys", workspaceArgument)
      .addHelpText("after", examples("sandpool keys list", "sandpool keys list --workspace team-a --json")),
  ).action(
    run(async (options: ConnectionOptions & { workspace?: string }) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "get", "/admin/v1/keys", {
        query: { workspace: options.workspace || undefined },
      });
      if (conn.json) return printJson(body);
      const items = body.items;
      if (items.length === 0) return out("no API keys");
      out(
        table(
          ["PREFIX", "NAME", "WORKSPACE", "CREATED", "LAST USED", "EXPIRES", "STATUS"],
          items.map((key) => [
            key.prefix,
            key.name ?? "-",
            key.workspace,
            when(key.createdAt),
            when(key.lastUsedAt),
            when(key.expiresAt),
            key.revokedAt
              ? `revoked ${when(key.revokedAt)}`
              : key.expiresAt && Date.parse(key.expiresAt) <= Date.now()
                ? "expired"
                : "active",
          ]),
        ),
      );
    }),
  );
}

function revokeCommand(): Command {
  return withConnection(
    new Command("revoke")
      .summary("revoke an API key everywhere")
      .description("Revoke an API key by its prefix; every replica refuses it within a second.")
      .argument("<prefix>", "the key's prefix (the 12 hex characters after sp_)", prefixArgument)
      .addHelpText("after", examples("sandpool keys revoke 3f9a0c1b2d4e")),
  ).action(
    run(async (prefix: string, options: ConnectionOptions) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "delete", "/admin/v1/keys/{prefix}", { path: { prefix } });
      if (conn.json) return printJson(body);
      const revoked = body.revoked;
      out(`revoked key ${revoked.prefix} of workspace ${revoked.workspace}`);
    }),
  );
}

export function keysCommand(): Command {
  return new Command("keys")
    .summary("create, list and revoke workspace API keys (admin API)")
    .description(
      "Workspace API keys through the gateway's admin API. Reads SANDPOOL_URL and SANDPOOL_ADMIN_TOKEN " +
        "(or --url and --token).",
    )
    .addCommand(createCommand())
    .addCommand(listCommand())
    .addCommand(revokeCommand());
}
