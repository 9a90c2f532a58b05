/**
 * `sandpool explain --workspace W --operation OPERATION [--session ID] [--image I] [--args JSON] [--egress-host H[:P]]`:
 * the decision trace of a would-be contract call through the admin API
 * (`POST /admin/v1/explain`): every check the gateway would make, its verdict and what
 * decided it, and the limits in force. Nothing runs: no sandbox is started or touched and
 * no quota is counted. Exit codes: 0 explained (allowed or denied), 1 refused by the gateway
 * or unreachable, 2 bad usage. `--operation` is the admin API's field name; `--op`, its
 * earlier spelling, is still taken. `--token-file FILE` (or `-` for stdin) asks whether a
 * bearer token would be accepted and for which workspace; a token is never taken on the
 * command line, where other users' `ps` and the shell's history would see it.
 */
import { readFileSync } from "node:fs";
import { Command, InvalidArgumentError, Option } from "commander";
import { contractOperations } from "../../operations/contract-operations.js";
import {
  AdminUsageError,
  adminCall,
  adminConnection,
  type ConnectionOptions,
} from "../admin/admin-client.js";
import { examples, runAdmin, withConnection, workspaceArgument } from "../admin/admin-command-kit.js";
import { out, printJson } from "../admin/admin-render.js";
import { renderExplain } from "./explain-render.js";

type ExplainOptions = ConnectionOptions & {
  workspace: string;
  operation?: string;
  /** The earlier spelling of --operation, kept for scripts. */
  op?: string;
  session?: string;
  image?: string;
  args?: Record<string, unknown>;
  tokenFile?: string;
  egressHost?: string;
};

/** The token in `file` (`-`: stdin), without surrounding blanks; never echoed in an error. */
export function readTokenFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new AdminUsageError(
      `cannot read --token-file ${file}: ${(error as NodeJS.ErrnoException).code ?? "error"}`,
    );
  }
  const token = text.trim();
  if (token === "") throw new AdminUsageError(`--token-file ${file} holds no token`);
  return token;
}

function argsOption(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new InvalidArgumentError(`--args is not JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new InvalidArgumentError("--args must be a JSON object (the operation's own request)");
  return parsed as Record<string, unknown>;
}

/** --args, with --session and --image filled in where given (they win over the same fields in --args). */
export function explainArgs(
  options: Pick<ExplainOptions, "args" | "session" | "image">,
): Record<string, unknown> {
  return {
    ...options.args,
    ...(options.session === undefined ? {} : { session_id: options.session }),
    ...(options.image === undefined ? {} : { image: options.image }),
  };
}

const operationIds = contractOperations.map((operation) => operation.id);

export function explainCommand(): Command {
  return withConnection(
    new Command("explain")
      .summary("show what a contract call would meet (policy, quotas, capacity) without running it")
      .description(
        "The decision trace of a would-be call of workspace W, from the admin API (/admin/v1/explain): each " +
          "check in the order the gateway makes it (token, mounted, args, resolve the session, policy, admit), its " +
          "verdict (pass, deny, skip), the rule, the policy field and value that decided, and the limits in " +
          "force. The decision is the first refusal's: the error code the real call would get. Nothing runs: " +
          "no sandbox is started, leased or touched, and no quota (slots, session rate, execution budget) is " +
          "counted. The quotas and the pool are read as they are now; a call a moment later may find them changed.\n\n" +
          "--args is the operation's own request: for sessions.create the CreateSession body; for a call on a " +
          "session its session_id (or --session) and, for sessions.exec, the Execute body; for files.put an " +
          "optional content_length.\n\n" +
          "Exit codes: 0 explained (allowed or denied), 1 refused by the gateway or unreachable, 2 bad usage.",
      )
      .requiredOption("--workspace <id>", "the workspace whose call to explain", workspaceArgument)
      .addOption(
        new Option("--operation <operation>", "the contract operation (the API's `operation`)").choices(
          operationIds,
        ),
      )
      .addOption(
        new Option("--op <operation>", "the same as --operation")
          .choices(operationIds)
          .conflicts("operation")
          .hideHelp(),
      )
      .option("--session <id>", "the session a call on a session is made on (args.session_id)")
      .option("--image <image>", "the image sessions.create asks for (args.image)")
      .option("--args <json>", "the operation's request as a JSON object", argsOption)
      .option(
        "--token-file <file>",
        "check a bearer token read from FILE (- for stdin): valid or not and why, its workspace (the rest is evaluated for it)",
      )
      .option(
        "--egress-host <host[:port]>",
        "also explain whether a session of this call could reach this destination, and which secrets (names) would be attached",
      )
      .addHelpText(
        "after",
        examples(
          "sandpool explain --workspace team-a --operation sessions.create",
          "sandpool explain --workspace team-a --operation sessions.create --image python:3.12 --json",
          `sandpool explain --workspace team-a --operation sessions.create --egress-host api.github.com \\\n      --args '{"sandpool":{"egress":{"hosts":["api.github.com"]},"secrets":["github"]}}'`,
          `sandpool explain --workspace team-a --operation sessions.exec --session S \\\n      --args '{"tool":"bash_code_execution","input":{"command":"ls"},"timeout_seconds":600}'`,
          "sandpool explain --workspace team-a --operation sessions.create --token-file - < token.txt",
        ),
      ),
  ).action(
    runAdmin("sandpool explain", async (options: ExplainOptions) => {
      const operation = options.operation ?? options.op;
      if (operation === undefined)
        throw new AdminUsageError(
          `say which call to explain: --operation OPERATION (one of ${operationIds.join(", ")})`,
        );
      const token = options.tokenFile === undefined ? undefined : readTokenFile(options.tokenFile);
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "post", "/admin/v1/explain", {
        body: {
          workspace: options.workspace,
          operation,
          args: explainArgs(options),
          ...(token === undefined ? {} : { token }),
          ...(options.egressHost === undefined ? {} : { egressHost: options.egressHost }),
        },
      });
      if (conn.json) return printJson(body);
      out(renderExplain(body));
    }),
  );
}
