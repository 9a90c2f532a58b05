/**
 * `sandpool policy apply -f policies.yaml [--dry-run]` and `sandpool policy export`: workspace
 * policy kept as a file (in git, in Helm values). The file is the whole set:
 *
 *   policies:
 *     team-a:
 *       maxConcurrentSessions: 3
 *       allowedTools: [code_execution]
 *     team-b:
 *       enabled: false
 *
 * A field left out is no narrowing; a workspace left out loses its row. The gateway applies
 * the set in one transaction (PUT /admin/v1/policies) and answers the diff, which is printed;
 * applying the same file again changes nothing and says so. Any invalid entry refuses the
 * whole file, with every problem listed (exit 1); a file that is not YAML exits 2.
 */
import { readFile } from "node:fs/promises";
import { Command } from "commander";
import { parseDocument, stringify } from "yaml";
import {
  type AdminBody,
  AdminUsageError,
  adminCall,
  adminConnection,
  type ConnectionOptions,
} from "../admin/admin-client.js";
import { examples, runAdmin, withConnection } from "../admin/admin-command-kit.js";
import { out, printJson } from "../admin/admin-render.js";
import { describeChange, type PolicyChange } from "./policy-render.js";

/** The admin API's answer to an apply (generated from its document), each row read field by field. */
type PolicySetAnswer = AdminBody<"put", "/admin/v1/policies">;
type ApplyAnswer = Omit<PolicySetAnswer, "changes"> & {
  changes: (Omit<PolicySetAnswer["changes"][number], keyof PolicyChange> & PolicyChange)[];
};

const run = <A extends unknown[]>(action: (...args: A) => Promise<void>) =>
  runAdmin("sandpool policy", action);

/** The file's content as a value; YAML problems (all of them) are a usage error. */
export async function readPolicyFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = file === "-" ? await readStdin() : await readFile(file, "utf8");
  } catch (error) {
    throw new AdminUsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (document.errors.length > 0) {
    throw new AdminUsageError(
      `${file} is not valid YAML:\n${document.errors.map((error) => `  - ${error.message.split("\n")[0]}`).join("\n")}`,
    );
  }
  const value = document.toJS();
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new AdminUsageError(
      `${file} must hold a map with a 'policies' key (policies: { <workspace>: {...} })`,
    );
  return value;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const MARK = { create: "+", update: "~", delete: "-", unchanged: "=" } as const;

/** The diff for people: one line per workspace, then a summary. */
export function renderApply(answer: ApplyAnswer, file: string): string {
  const lines: string[] = [];
  const count = { create: 0, update: 0, delete: 0, unchanged: 0 };
  for (const change of answer.changes) {
    count[change.action]++;
    if (change.action === "unchanged") continue;
    lines.push(`${MARK[change.action]} ${change.workspace}: ${describeChange(change)}`);
  }
  // Secrets the file binds (docs/secrets.md): only their bindings change, never their values.
  for (const secret of answer.secrets ?? [])
    if (secret.action === "rebind")
      lines.push(`~ ${secret.workspace}: secret ${secret.name}: binding replaced (value kept)`);
  if (!answer.changed) {
    lines.push(
      `nothing to change: the policies in force already match ${file} (${count.unchanged} workspace${count.unchanged === 1 ? "" : "s"})`,
    );
    return lines.join("\n");
  }
  lines.push("");
  lines.push(
    answer.dryRun
      ? `dry run: ${count.create} to create, ${count.update} to update, ${count.delete} to delete, ` +
          `${count.unchanged} unchanged; nothing was changed (run without --dry-run to apply)`
      : `applied: ${count.create} created, ${count.update} updated, ${count.delete} deleted, ${count.unchanged} unchanged`,
  );
  return lines.join("\n");
}

export function applyCommand(): Command {
  return withConnection(
    new Command("apply")
      .summary("make workspace policy exactly what a YAML file says (policy as code)")
      .description(
        "Apply a policies file: every workspace in it gets exactly the narrowings it lists, and a " +
          "workspace's row that the file leaves out is removed. Shows the diff against what is in force; " +
          "the gateway applies it in one transaction, audited per workspace. Applying the same file again " +
          "changes nothing. Any invalid entry refuses the whole file, with every problem listed.\n\n" +
          "File format:\n  policies:\n    team-a:\n      maxConcurrentSessions: 3\n      allowedTools: [code_execution]\n" +
          "      secrets:   # bindings of secrets stored with `sandpool secrets set` (never values)\n" +
          '        github: {hosts: [api.github.com], header: Authorization, template: "Bearer {{secret}}"}\n',
      )
      .requiredOption("-f, --file <path>", "the policies file (YAML; - for stdin)")
      .option("--dry-run", "show the diff only; change nothing")
      .addHelpText(
        "after",
        examples(
          "sandpool policy apply -f policies.yaml --dry-run",
          "sandpool policy apply -f policies.yaml",
          "sandpool policy export > policies.yaml",
        ),
      ),
  ).action(
    run(async (options: ConnectionOptions & { file: string; dryRun?: boolean }) => {
      const set = await readPolicyFile(options.file);
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "put", "/admin/v1/policies", {
        query: { dryRun: options.dryRun ? "true" : undefined },
        body: set,
      });
      if (conn.json) return printJson(body);
      out(renderApply(body, options.file));
    }),
  );
}

export function exportCommand(): Command {
  return withConnection(
    new Command("export")
      .summary("print the policies in force as a file `policy apply -f` takes")
      .description("Print every workspace's policy row as a policies file (YAML; --json for JSON).")
      .addHelpText("after", examples("sandpool policy export > policies.yaml")),
  ).action(
    run(async (options: ConnectionOptions) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "get", "/admin/v1/policies");
      if (conn.json) return printJson(body);
      out(stringify(body));
    }),
  );
}
