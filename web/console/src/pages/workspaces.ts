/**
 * Workspaces: every one the admin API knows of (a policy row, a key or a live session), with
 * today's usage (UTC), a search, and a way to open any workspace by id (one with none of
 * those still has the deployment's policy, and can be given keys and a policy).
 */
import type { UsageReport } from "../api.js";
import { h, replace, table } from "../dom.js";
import { type PageContext, workspaceHref } from "../page.js";

const MAX_USAGE = 50;
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export async function workspacesPage({ api, main }: PageContext): Promise<void> {
  const search = h("input", {
    id: "search",
    type: "search",
    placeholder: "Filter by id",
    autocomplete: "off",
  });
  const open = h("input", {
    id: "open-id",
    placeholder: "workspace id",
    autocomplete: "off",
    required: true,
  });
  const openError = h("span", { class: "field-error", id: "open-error", "aria-live": "polite" });
  const list = h("section", { "aria-label": "Workspaces" }, h("p", null, "Loading..."));
  replace(
    main,
    h("h1", { tabindex: "-1" }, "Workspaces"),
    h(
      "div",
      { class: "toolbar" },
      h("label", { for: "search" }, "Search"),
      search,
      h(
        "form",
        {
          class: "inline",
          on: {
            submit: (event) => {
              event.preventDefault();
              const id = open.value.trim();
              if (!ID.test(id)) {
                openError.textContent =
                  "letters, digits, . _ : - (up to 128), starting with a letter or digit";
                return;
              }
              location.hash = workspaceHref(id);
            },
          },
        },
        h("label", { for: "open-id" }, "Open"),
        open,
        h("button", { type: "submit" }, "Open"),
        openError,
      ),
    ),
    list,
  );

  const [rows, sessions, keys] = await Promise.all([api.workspaces(), api.sessions(), api.keys()]);
  const ids = [
    ...new Set([
      ...rows.map((row) => row.workspaceId),
      ...sessions.map((session) => session.workspace),
      ...keys.map((key) => key.workspace),
    ]),
  ].sort();
  const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const usage = new Map<string, UsageReport>();
  await Promise.all(
    ids.slice(0, MAX_USAGE).map(async (id) => usage.set(id, await api.usage(id, "day", today))),
  );

  const draw = () => {
    const wanted = search.value.trim().toLowerCase();
    const shown = ids.filter((id) => id.toLowerCase().includes(wanted));
    replace(
      list,
      table(
        ["Workspace", "Policy", "Sessions", "Keys", "Exec calls today", "CPU-s today", "Refused today"],
        shown.map((id) => {
          const row = rows.find((candidate) => candidate.workspaceId === id);
          const totals = usage.get(id)?.totals;
          return [
            h("a", { href: workspaceHref(id) }, id),
            row ? (row.enabled ? `own (v${row.version})` : "disabled") : "deployment's",
            String(sessions.filter((session) => session.workspace === id).length),
            String(keys.filter((key) => key.workspace === id && key.revokedAt === null).length),
            totals ? String(totals.execCalls) : "-",
            totals ? totals.cpuSeconds.toFixed(1) : "-",
            totals ? String(totals.denied) : "-",
          ];
        }),
        ids.length === 0
          ? "No workspace yet. A workspace appears once it has a policy, an API key or a session: open one by id above to give it a policy or a key."
          : `No workspace matches '${search.value}'.`,
      ),
      ids.length > MAX_USAGE ? h("p", { class: "help" }, `Usage shown for the first ${MAX_USAGE}.`) : null,
    );
  };
  search.addEventListener("input", draw);
  draw();
}
