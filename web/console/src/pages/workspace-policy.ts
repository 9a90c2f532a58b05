/**
 * A workspace's policy: the values in force and where each comes from (the deployment's
 * default, the workspace's row, or the deployment's ceiling over the row), then an editor:
 * problems next to their field (found here, or by the API's 422), the diff against the row
 * before anything is applied, and the values in force again after.
 */
import { AdminApiError } from "../api.js";
import { button, h, notice, replace, table } from "../dom.js";
import type { PageContext } from "../page.js";
import {
  type FieldChange,
  type FieldName,
  fieldText,
  POLICY_FIELDS,
  policyEdit,
  problemsByField,
  sourceOf,
} from "../policy-fields.js";

const SOURCE_LABEL = {
  deployment: "deployment",
  workspace: "workspace",
  ceiling: "deployment ceiling",
} as const;

export async function policyTab(
  { api, failed }: PageContext,
  workspace: string,
  area: HTMLElement,
): Promise<void> {
  let view = await api.policy(workspace);
  const status = h("div", { class: "status", "aria-live": "polite" });
  const inForce = h("div");
  const editor = h("div");

  const drawInForce = () =>
    replace(
      inForce,
      h("h2", null, "In force"),
      h(
        "p",
        { class: "help" },
        view.configured
          ? `The workspace's own row (version ${view.row?.version}, by ${view.row?.updatedBy}) narrows the deployment's policy.`
          : "No row: the deployment's policy applies as it is.",
      ),
      table(
        ["Field", "In force", "From", "Workspace row"],
        Object.entries(view.effective)
          .filter(([name]) => name !== "workspace" && name !== "configured")
          .map(([name, value]) => {
            const source = sourceOf(view, name);
            return [
              h("code", null, name),
              h("span", { "data-field": name }, show(value)),
              h("span", { class: `source ${source}` }, SOURCE_LABEL[source]),
              view.row && name in view.row ? show((view.row as Record<string, unknown>)[name]) : "-",
            ];
          }),
        "No values.",
      ),
    );

  const drawForm = (texts?: Partial<Record<FieldName, string>>, problems = new Map<string, string[]>()) => {
    const inputs = new Map<FieldName, HTMLInputElement>();
    const general = problems.get("") ?? [];
    const form = h(
      "form",
      {
        class: "policy-form",
        novalidate: true,
        on: {
          submit: (event) => {
            event.preventDefault();
            const entered: Partial<Record<FieldName, string>> = {};
            for (const [name, input] of inputs) entered[name] = input.value;
            const result = policyEdit(view.row, entered);
            if ("problems" in result) {
              drawForm(entered, new Map([...result.problems].map(([name, problem]) => [name, [problem]])));
              editor.querySelector<HTMLElement>("[aria-invalid=true]")?.focus();
              return;
            }
            if (result.changes.length === 0) {
              replace(status, notice("info", "Nothing to apply: the form is the row as it is."));
              return;
            }
            drawDiff(entered, result.edit, result.changes);
          },
        },
      },
      h("h2", null, "Edit"),
      h(
        "p",
        { class: "help" },
        "Empty: the deployment's value applies. A workspace may narrow the deployment, never widen it.",
      ),
      general.length > 0 ? notice("error", general.join("; ")) : null,
      POLICY_FIELDS.map((field) => {
        const id = `field-${field.name}`;
        const fieldProblems = problems.get(field.name) ?? [];
        const input = h("input", {
          id,
          name: field.name,
          value: texts?.[field.name] ?? fieldText(view.row, field.name),
          autocomplete: "off",
          "aria-describedby": `${id}-help${fieldProblems.length ? ` ${id}-error` : ""}`,
          ...(fieldProblems.length ? { "aria-invalid": "true" } : {}),
        });
        inputs.set(field.name, input);
        return h(
          "div",
          { class: `field${fieldProblems.length ? " invalid" : ""}` },
          h("label", { for: id }, field.name),
          input,
          h("span", { class: "help", id: `${id}-help` }, field.help),
          fieldProblems.length
            ? h("span", { class: "field-error", id: `${id}-error` }, fieldProblems.join("; "))
            : null,
        );
      }),
      h("button", { type: "submit" }, "Review changes"),
    );
    replace(editor, form);
  };

  const drawDiff = (entered: Partial<Record<FieldName, string>>, edit: object, changes: FieldChange[]) => {
    const apply = button("Apply", () => {
      apply.disabled = true;
      api
        .putPolicy(workspace, edit)
        .then((after) => {
          view = after;
          drawInForce();
          drawForm();
          replace(
            status,
            notice("info", `Applied: ${changes.map((change) => change.name).join(", ")}. In force now.`),
          );
        })
        .catch((error: unknown) => {
          if (error instanceof AdminApiError && error.problems.length > 0) {
            drawForm(entered, problemsByField(error.problems));
            replace(status, notice("error", `Refused (${error.code}): see the fields marked.`));
            editor.querySelector<HTMLElement>("[aria-invalid=true]")?.focus();
          } else if (error instanceof AdminApiError) {
            drawForm(entered);
            replace(status, notice("error", `Refused: ${error.message} (${error.code}).`));
          } else failed(error);
        });
    });
    replace(
      editor,
      h("h2", { class: "review" }, "Review"),
      h("p", null, `These changes to ${workspace}'s row take effect on every replica within a second:`),
      table(
        ["Field", "Now", "After"],
        changes.map((change) => [
          h("code", null, change.name),
          h("del", null, change.before || "(deployment's)"),
          h("ins", null, change.after || "(deployment's)"),
        ]),
        "No change.",
      ),
      h(
        "div",
        { class: "actions" },
        apply,
        button("Back to the form", () => drawForm(entered), { class: "secondary" }),
      ),
    );
    apply.focus();
  };

  replace(area, status, inForce, editor);
  drawInForce();
  drawForm();
}

function show(value: unknown): string {
  if (value === null || value === undefined) return "none";
  if (Array.isArray(value)) return value.length === 0 ? "(none)" : value.join(", ");
  return String(value);
}
