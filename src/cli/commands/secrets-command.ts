/**
 * `sandpool secrets`: workspace secrets through the admin API (`/admin/v1/workspaces/{ws}/secrets`),
 * with an admin token (SANDPOOL_URL / SANDPOOL_ADMIN_TOKEN, or --url / --token). `set` reads the
 * value from a file or from stdin, never from an argument: the command line of a process is
 * visible to every user of the machine (`ps`). No command ever prints a value: the API never
 * answers one. Exit codes: 0 done, 1 refused or unreachable, 2 bad usage.
 */
import { readFile } from "node:fs/promises";
import { Command, InvalidArgumentError } from "commander";
import { AdminUsageError } from "../admin/admin-client.js";
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

const run = <A extends unknown[]>(action: (...args: A) => Promise<void>) =>
  runAdmin("sandpool secrets", action);

const SECRET_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function nameArgument(value: string): string {
  if (!SECRET_NAME.test(value))
    throw new InvalidArgumentError(
      `'${value}' is not a secret name (lower-case letters, digits, - and _, starting with a letter or digit)`,
    );
  return value;
}

const repeated = (value: string, previous: string[] = []) => [...previous, value];

function portOption(value: string, previous: number[] = []): number[] {
  const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(port >= 1 && port <= 65_535)) throw new InvalidArgumentError(`'${value}' is not a port (1-65535)`);
  return [...previous, port];
}

export interface SetOptions {
  host?: string[];
  header?: string;
  template?: string;
  basicAuthUser?: string;
  port?: number[];
  path?: string[];
  method?: string[];
  valueFile?: string;
  valueStdin?: boolean;
}

/** The PUT body's binding from `set`'s options (the gateway judges the rest, naming the field). */
export function bindingBodyOf(options: SetOptions): Record<string, unknown> {
  if (!options.host || options.host.length === 0)
    throw new AdminUsageError("--host is required: the hosts the secret is sent to (repeat it for more)");
  const basic = options.basicAuthUser !== undefined;
  if (basic && (options.header !== undefined || options.template !== undefined))
    throw new AdminUsageError("give --header and --template, or --basic-auth-user, not both");
  if (!basic && options.header === undefined)
    throw new AdminUsageError(
      'give --header and --template (e.g. --header Authorization --template "Bearer {{secret}}"), or --basic-auth-user',
    );
  return {
    hosts: options.host,
    ...(options.port ? { ports: options.port } : {}),
    ...(options.path ? { paths: options.path } : {}),
    ...(options.method ? { methods: options.method.map((method) => method.toUpperCase()) } : {}),
    ...(basic
      ? { basicAuth: { username: options.basicAuthUser } }
      : { header: options.header, template: options.template ?? "{{secret}}" }),
  };
}

/** The value from --value-file or stdin, one trailing newline dropped (echo and editors add one). */
export async function readSecretValue(
  options: Pick<SetOptions, "valueFile" | "valueStdin">,
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<string> {
  if ((options.valueFile === undefined) === (options.valueStdin !== true))
    throw new AdminUsageError(
      "give the value with --value-file FILE or --value-stdin (never on the command line)",
    );
  let text: string;
  if (options.valueFile !== undefined) {
    try {
      text = await readFile(options.valueFile, "utf8");
    } catch (error) {
      throw new AdminUsageError(
        `--value-file ${options.valueFile} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  } else {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    text = Buffer.concat(chunks).toString("utf8");
  }
  const value = text.replace(/\r?\n$/, "");
  if (value === "") throw new AdminUsageError("the value is empty");
  return value;
}

function setCommand(): Command {
  return withConnection(
    new Command("set")
      .summary("store a workspace secret and where it may be sent")
      .description(
        "Store (or replace) a workspace secret. Sandboxes of the workspace never see it: the egress proxy " +
          "adds it to their requests to the bound hosts, as a header (--header and --template, where " +
          "{{secret}} stands for the value) or as HTTP basic auth (--basic-auth-user). The value is read " +
          "from --value-file or stdin (one trailing newline dropped), never from the command line, and " +
          "no answer ever shows it again.",
      )
      .argument("<workspace>", "the workspace", workspaceArgument)
      .argument("<name>", "the secret's name", nameArgument)
      .option("--host <host>", "a host it is sent to, exact or *.suffix (repeatable; one at least)", repeated)
      .option("--header <name>", "the header it is sent in, e.g. Authorization")
      .option(
        "--template <text>",
        "the header's value, {{secret}} standing for the secret (default {{secret}})",
      )
      .option("--basic-auth-user <username>", "send it as HTTP basic auth's password, with this username")
      .option("--port <port>", "only to this destination port (repeatable)", portOption)
      .option("--path <prefix>", "only for request paths starting with this (repeatable)", repeated)
      .option("--method <method>", "only for this request method (repeatable)", repeated)
      .option("--value-file <file>", "read the value from this file")
      .option("--value-stdin", "read the value from stdin")
      .addHelpText(
        "after",
        examples(
          'sandpool secrets set team-a github --host api.github.com --header Authorization --template "Bearer {{secret}}" --value-file ./github-token',
          "op read op://ci/pypi/password | sandpool secrets set team-a pypi --host upload.pypi.org --basic-auth-user __token__ --value-stdin",
        ),
      ),
  ).action(
    run(async (workspace: string, name: string, options: ConnectionOptions & SetOptions) => {
      const conn = adminConnection(options);
      const binding = bindingBodyOf(options);
      const value = await readSecretValue(options);
      const { status, body } = await adminCall(conn, "put", "/admin/v1/workspaces/{ws}/secrets/{name}", {
        path: { ws: workspace, name },
        body: { value, ...binding },
      });
      if (conn.json) return printJson(body);
      out(
        `${status === 201 ? "stored" : "replaced"} secret ${name} of workspace ${workspace}, sent to ${body.hosts.join(", ")}`,
      );
    }),
  );
}

/** How a secret is presented, in a word or two. */
function presentation(secret: {
  header?: string;
  template?: string;
  basicAuth?: { username: string };
}): string {
  return secret.basicAuth
    ? `basic auth (${secret.basicAuth.username})`
    : `${secret.header}: ${secret.template}`;
}

function narrowing(secret: { ports?: number[]; paths?: string[]; methods?: string[] }): string {
  const parts = [
    ...(secret.ports ? [`ports ${secret.ports.join(",")}`] : []),
    ...(secret.paths ? [`paths ${secret.paths.join(",")}`] : []),
    ...(secret.methods ? [`methods ${secret.methods.join(",")}`] : []),
  ];
  return parts.length === 0 ? "-" : parts.join("; ");
}

function listCommand(): Command {
  return withConnection(
    new Command("list")
      .summary("list a workspace's secrets (never their values)")
      .description("List a workspace's secrets: where each is sent and how, and when it was last set.")
      .argument("<workspace>", "the workspace", workspaceArgument)
      .addHelpText("after", examples("sandpool secrets list team-a", "sandpool secrets list team-a --json")),
  ).action(
    run(async (workspace: string, options: ConnectionOptions) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "get", "/admin/v1/workspaces/{ws}/secrets", {
        path: { ws: workspace },
      });
      if (conn.json) return printJson(body);
      if (body.items.length === 0) return out(`workspace ${workspace} has no secrets`);
      out(
        table(
          ["NAME", "HOSTS", "PRESENTED AS", "ONLY", "UPDATED"],
          body.items.map((secret) => [
            secret.name,
            secret.hosts.join(","),
            presentation(secret),
            narrowing(secret),
            secret.updatedAt.replace(/\.\d{3}Z$/, "Z"),
          ]),
        ),
      );
    }),
  );
}

function removeCommand(): Command {
  return withConnection(
    new Command("rm")
      .summary("remove a workspace secret")
      .description("Remove a workspace secret; requests of its sandboxes no longer carry it.")
      .argument("<workspace>", "the workspace", workspaceArgument)
      .argument("<name>", "the secret's name", nameArgument)
      .addHelpText("after", examples("sandpool secrets rm team-a github")),
  ).action(
    run(async (workspace: string, name: string, options: ConnectionOptions) => {
      const conn = adminConnection(options);
      await adminCall(conn, "delete", "/admin/v1/workspaces/{ws}/secrets/{name}", {
        path: { ws: workspace, name },
      });
      if (conn.json) return printJson({ removed: { workspace, name } });
      out(`removed secret ${name} of workspace ${workspace}`);
    }),
  );
}

export function secretsCommand(): Command {
  return new Command("secrets")
    .summary("store, list and remove workspace secrets (admin API)")
    .description(
      "Workspace secrets through the gateway's admin API: credentials the egress proxy adds to sandboxes' " +
        "requests to the hosts they are bound to, so the code never holds them (docs/secrets.md). Reads " +
        "SANDPOOL_URL and SANDPOOL_ADMIN_TOKEN (or --url and --token).",
    )
    .addCommand(setCommand())
    .addCommand(listCommand())
    .addCommand(removeCommand());
}
