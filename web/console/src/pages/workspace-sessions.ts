/**
 * A workspace's live sessions: end one, hibernate one, resume one. A hibernated session also
 * resumes on its next contract call, on any node that offers its image; Resume does it now,
 * through the admin API's resume (the same restore a call would run).
 */
import { AdminApiError } from "../api.js";
import { button, bytes, h, notice, replace, table, when } from "../dom.js";
import type { PageContext } from "../page.js";

export async function sessionsTab(
  { api, failed }: PageContext,
  workspace: string,
  area: HTMLElement,
): Promise<void> {
  const status = h("div", { class: "status", "aria-live": "polite" });
  const list = h("div");
  const act = (promise: Promise<unknown>, done: string) =>
    promise
      .then(() => draw())
      .then(() => replace(status, notice("info", done)))
      .catch((error: unknown) => {
        if (error instanceof AdminApiError)
          replace(status, notice("error", `${error.message} (${error.code})`));
        else failed(error);
      });

  const draw = async () => {
    const sessions = await api.sessions(workspace);
    replace(
      list,
      table(
        ["Session", "State", "Image", "Pool", "Created", "Last activity", "Expires", "In flight", "Actions"],
        sessions.map((session) => [
          h("code", null, session.id),
          session.state === "hibernated" && session.checkpoint
            ? `hibernated (${session.checkpoint.kind}, ${bytes(session.checkpoint.bytes)}): resumes on its next call`
            : session.state,
          h("code", null, session.image),
          session.pool,
          when(session.created),
          when(session.lastActivity),
          when(session.expires),
          String(session.activeCalls),
          h(
            "div",
            { class: "actions" },
            session.state === "hibernated"
              ? button("Resume", () => act(api.resumeSession(session.id), `Session ${session.id} resumed.`), {
                  class: "secondary",
                  "aria-label": `Resume session ${session.id}`,
                })
              : null,
            session.state === "running"
              ? button(
                  "Hibernate",
                  () => act(api.hibernateSession(session.id), `Session ${session.id} hibernated.`),
                  {
                    class: "secondary",
                    "aria-label": `Hibernate session ${session.id}`,
                  },
                )
              : null,
            button(
              "End",
              () => {
                if (!window.confirm(`End session ${session.id}? Its sandbox and files are destroyed.`))
                  return;
                act(api.endSession(session.id), `Session ${session.id} ended.`);
              },
              { class: "danger", "aria-label": `End session ${session.id}` },
            ),
          ),
        ]),
        "No session of this workspace is running. Its sessions appear here while a client holds them (POST /sessions with one of its keys).",
      ),
    );
  };
  replace(
    area,
    status,
    h("h2", null, "Sessions"),
    h(
      "p",
      { class: "help" },
      "A hibernated session resumes on its next call (any contract call on it), or now with Resume.",
    ),
    list,
  );
  await draw();
}
