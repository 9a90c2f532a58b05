/**
 * `sandpool sessions`: operators see the sessions open now (all, or one workspace's), end one,
 * hibernate one or resume one, through the gateway's admin API. Ending a session destroys its sandbox,
 * frees the workspace's slot and closes its usage, as when its client ends it; hibernating
 * saves its sandbox to a checkpoint and removes it, and its next call (or `resume`) restores it.
 * All three are audited.
 * Exit codes: 0 done, 1 refused (an unknown session too) or unreachable, 2 bad usage.
 */
import { Command } from "commander";
import { type AdminBody, adminCall, adminConnection, type ConnectionOptions } from "../admin/admin-client.js";
import {
  examples,
  runAdmin,
  usageExits,
  withConnection,
  workspaceArgument,
} from "../admin/admin-command-kit.js";
import { out, printJson, table } from "../admin/admin-render.js";

const PREFIX = "sandpool sessions";

/** A running session as the admin API answers it: the type generated from its OpenAPI document. */
type SessionItem = AdminBody<"get", "/admin/v1/sessions">["items"][number];

type Options = ConnectionOptions & { workspace?: string };

/** "3m ago", "2h ago": how long since an ISO date, for people. */
export function ago(iso: string, now: number = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** Its state, and a hibernation refused at a bound (it kept running): the operator sees why. */
function stateOf(session: SessionItem): string {
  const refused = session.hibernationRefused;
  return refused ? `${session.state} (hibernate refused: ${refused.code})` : session.state;
}

function listCommand(): Command {
  return withConnection(
    new Command("list")
      .summary("list the sessions running now")
      .description(
        "List the sessions running now, oldest first: every workspace's, or one workspace's. " +
          "IN_FLIGHT is the calls running on a session at this moment (0 between calls), not a total.",
      )
      .option("--workspace <workspace>", "only this workspace's sessions", workspaceArgument)
      .addHelpText(
        "after",
        examples(
          "sandpool sessions list",
          "sandpool sessions list --workspace team-a",
          "sandpool sessions list --json",
        ),
      ),
  ).action(
    runAdmin(PREFIX, async (options: Options) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "get", "/admin/v1/sessions", {
        query: { workspace: options.workspace },
      });
      if (conn.json) return printJson(body);
      const { items } = body;
      if (items.length === 0)
        return out(
          options.workspace ? `no session of ${options.workspace} is running` : "no session is running",
        );
      out(
        table(
          ["ID", "WORKSPACE", "STATE", "IMAGE", "POOL", "CREATED", "LAST ACTIVITY", "IN_FLIGHT", "EXPIRES"],
          items.map((session) => [
            session.id,
            session.workspace,
            stateOf(session),
            session.image,
            session.pool,
            session.created,
            ago(session.lastActivity),
            String(session.activeCalls),
            session.expires,
          ]),
        ),
      );
    }),
  );
}

function endCommand(): Command {
  return withConnection(
    new Command("end")
      .summary("end a running session (its sandbox is destroyed)")
      .description(
        "End a running session: its sandbox is destroyed, the workspace's slot freed and its usage " +
          "closed, as when its client ends it. The action is audited. Without --workspace the session " +
          "is found in whichever workspace holds it.",
      )
      .argument("<id>", "the session id (from `sandpool sessions list`)")
      .option("--workspace <workspace>", "the workspace the session belongs to", workspaceArgument)
      .addHelpText(
        "after",
        examples("sandpool sessions end 3q2+7w...", "sandpool sessions end 3q2+7w... --workspace team-a"),
      ),
  ).action(
    runAdmin(PREFIX, async (id: string, options: Options) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "delete", "/admin/v1/sessions/{id}", {
        path: { id },
        query: { workspace: options.workspace },
      });
      if (conn.json) return printJson(body);
      const { ended } = body;
      out(`ended session ${ended.id} of ${ended.workspace} (image ${ended.image}, pool ${ended.pool})`);
    }),
  );
}

function hibernateCommand(): Command {
  return withConnection(
    new Command("hibernate")
      .summary("hibernate a session (its sandbox saved and removed; its next call resumes it)")
      .description(
        "Hibernate an idle session: its sandbox is saved to a checkpoint and its container removed. On a " +
          "gvisor pool the checkpoint keeps the interpreter's memory and every file; on a plain container, " +
          "the session's files (the interpreter starts anew, and the first Execute says so in its stderr). " +
          "The session keeps its id, slot and deadlines; any call on it resumes it. Refused while a call " +
          "is in flight (try again), where the pool cannot hibernate, at the workspace's maxHibernatedSessions, " +
          "and when the checkpoint store is at its byte cap or its disk under its free floor (the session " +
          "keeps running; `sessions list` shows the refusal). The action is audited.",
      )
      .argument("<id>", "the session id (from `sandpool sessions list`)")
      .option("--workspace <workspace>", "the workspace the session belongs to", workspaceArgument)
      .addHelpText(
        "after",
        examples("sandpool sessions hibernate 3q2+7w...", "sandpool sessions hibernate 3q2+7w... --json"),
      ),
  ).action(
    runAdmin(PREFIX, async (id: string, options: Options) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "post", "/admin/v1/sessions/{id}/hibernate", {
        path: { id },
        query: { workspace: options.workspace },
      });
      if (conn.json) return printJson(body);
      const session = body.hibernated;
      const kept = session.checkpoint
        ? ` (${session.checkpoint.kind} checkpoint, ${session.checkpoint.bytes} bytes)`
        : "";
      out(`${session.state} session ${session.id} of ${session.workspace}${kept}`);
    }),
  );
}

function resumeCommand(): Command {
  return withConnection(
    new Command("resume")
      .summary("resume a hibernated session now (as its next call would)")
      .description(
        "Resume a hibernated session now rather than on its next call: its checkpoint is restored into " +
          "a sandbox (gvisor: memory and files; container: files, the interpreter starts anew) and it " +
          "runs again under its id, slot and deadlines. A running session is left as it is. Refused with " +
          "503 session.resume_failed when no sandbox could take it (its checkpoint is kept: try again). " +
          "The action is audited.",
      )
      .argument("<id>", "the session id (from `sandpool sessions list`)")
      .option("--workspace <workspace>", "the workspace the session belongs to", workspaceArgument)
      .addHelpText(
        "after",
        examples("sandpool sessions resume 3q2+7w...", "sandpool sessions resume 3q2+7w... --json"),
      ),
  ).action(
    runAdmin(PREFIX, async (id: string, options: Options) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "post", "/admin/v1/sessions/{id}/resume", {
        path: { id },
        query: { workspace: options.workspace },
      });
      if (conn.json) return printJson(body);
      const { resumed: session, restored } = body;
      out(
        restored
          ? `resumed session ${session.id} of ${session.workspace}: ${session.state}`
          : `session ${session.id} of ${session.workspace} was not hibernated: ${session.state}`,
      );
    }),
  );
}

export function sessionsCommand(): Command {
  return usageExits(
    new Command("sessions")
      .summary("list, end, hibernate and resume sessions through the admin API")
      .description(
        "List, end, hibernate and resume sessions through the gateway's admin API (/admin/v1), with an admin token.\n\n" +
          "Every sub-command takes --url (env SANDPOOL_URL, default http://127.0.0.1:8080), --token " +
          "(env SANDPOOL_ADMIN_TOKEN; `sandpool dev` prints one) and --json (the raw answer).\n\n" +
          "Exit codes: 0 done, 1 refused by the gateway (an unknown session too) or unreachable, 2 bad usage.",
      )
      .addCommand(listCommand())
      .addCommand(endCommand())
      .addCommand(hibernateCommand())
      .addCommand(resumeCommand()),
  );
}
