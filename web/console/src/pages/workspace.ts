/** One workspace: its tabs (policy, explain, keys, sessions, audit, usage), one at a time. */
import { h, replace } from "../dom.js";
import { type PageContext, workspaceHref } from "../page.js";
import { auditTab } from "./workspace-audit.js";
import { explainTab } from "./workspace-explain.js";
import { keysTab } from "./workspace-keys.js";
import { policyTab } from "./workspace-policy.js";
import { sessionsTab } from "./workspace-sessions.js";
import { usageTab } from "./workspace-usage.js";

export type Tab = (context: PageContext, workspace: string, area: HTMLElement) => Promise<void>;

const TABS: [string, string, Tab][] = [
  ["policy", "Policy", policyTab],
  ["explain", "Explain", explainTab],
  ["keys", "Keys", keysTab],
  ["sessions", "Sessions", sessionsTab],
  ["audit", "Audit", auditTab],
  ["usage", "Usage", usageTab],
];

export async function workspacePage(context: PageContext, workspace: string, tab: string): Promise<void> {
  const chosen = TABS.find(([name]) => name === tab) ?? TABS[0]!;
  const area = h("section", { id: "tab", "aria-label": chosen[1] });
  replace(
    context.main,
    h("p", { class: "crumbs" }, h("a", { href: "#/workspaces" }, "Workspaces"), " / "),
    h("h1", { tabindex: "-1" }, workspace),
    h(
      "nav",
      { class: "tabs", "aria-label": "Workspace" },
      TABS.map(([name, label]) =>
        h(
          "a",
          { href: workspaceHref(workspace, name), ...(name === chosen[0] ? { "aria-current": "page" } : {}) },
          label,
        ),
      ),
    ),
    area,
  );
  await chosen[2](context, workspace, area);
}
