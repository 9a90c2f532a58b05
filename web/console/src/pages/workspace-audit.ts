/** A workspace's audit rows: refused calls and operators' changes, newest first. */
import type { AuditItem } from "../api.js";
import { h, replace, table, when } from "../dom.js";
import type { PageContext } from "../page.js";

export async function auditTab({ api }: PageContext, workspace: string, area: HTMLElement): Promise<void> {
  const items = await api.audit({ workspace, limit: 200 });
  replace(
    area,
    h("h2", null, "Audit"),
    h(
      "p",
      { class: "help" },
      "Refused calls (merged per second, operation and code) and operators' changes; the newest 200.",
    ),
    table(
      ["When", "Kind", "Who", "What", "Detail"],
      items.map((item) => [when(item.at), item.kind, who(item), what(item), detail(item)]),
      "No audit row for this workspace yet: refused calls and operators' changes (policy edits, keys, ended sessions) appear here.",
    ),
  );
}

const who = (item: AuditItem): string => (item.kind === "admin" ? item.actor : (item.principal ?? "-"));

function what(item: AuditItem): string {
  if (item.kind === "admin") return `${item.action} ${item.target}`;
  return `${item.operation} refused: ${item.code}${item.status ? ` (${item.status})` : ""}`;
}

function detail(item: AuditItem): HTMLElement | string {
  if (item.kind === "denied") return item.count > 1 ? `${item.count} refusals` : "";
  return item.detail ? h("code", { class: "detail" }, JSON.stringify(item.detail)) : "";
}
