/**
 * Explain: would a call of this workspace be allowed, and why. The admin API's explain walks
 * the rules the real call would meet (src/explain) without running it; the console asks it
 * about an image (opening a session), a tool or a file (on one of the workspace's sessions)
 * and shows each step of the decision trace. With a bearer token pasted, the trace first says
 * whether the gateway would accept it, and the rest is evaluated for the token's workspace.
 * The token field is a password field; the answer never carries the token back.
 */
import { AdminApiError, type ExplainAnswer, type ExplainRequest } from "../api.js";
import { h, notice, replace, table } from "../dom.js";
import type { PageContext } from "../page.js";
import { TOOLS } from "../policy-fields.js";

const TOOL_INPUT: Record<(typeof TOOLS)[number], object> = {
  code_execution: { code: "print(1)" },
  bash_code_execution: { command: "true" },
  text_editor_code_execution: { command: "view", path: "." },
};

export async function explainTab(
  { api, failed }: PageContext,
  workspace: string,
  area: HTMLElement,
): Promise<void> {
  const sessions = (await api.sessions(workspace)).filter((session) => session.state !== "hibernating");
  const question = h(
    "select",
    { id: "question" },
    h("option", { value: "image" }, "Open a session with an image"),
    h("option", { value: "tool" }, "Run a tool on a session"),
    h("option", { value: "file" }, "Upload a file to a session"),
  );
  const image = h("input", {
    id: "explain-image",
    placeholder: "empty: the default image",
    autocomplete: "off",
  });
  const tool = h(
    "select",
    { id: "explain-tool" },
    TOOLS.map((name) => h("option", { value: name }, name)),
  );
  const size = h("input", {
    id: "explain-size",
    inputmode: "numeric",
    value: "1048576",
    autocomplete: "off",
  });
  const session = h("input", {
    id: "explain-session",
    list: "explain-sessions",
    value: sessions[0]?.id ?? "",
    autocomplete: "off",
  });
  const token = h("input", {
    id: "explain-token",
    type: "password",
    placeholder: "optional: check a workspace's token too",
    autocomplete: "off",
  });
  const sizeError = h("span", { class: "field-error", "aria-live": "polite" });
  const answer = h("div", { "aria-live": "polite" });
  const row = (label: string, id: string, input: HTMLElement, extra?: HTMLElement) =>
    h("div", { class: "field", "data-for": id }, h("label", { for: id }, label), input, extra);
  const fields = {
    image: row("Image", "explain-image", image),
    tool: row("Tool", "explain-tool", tool),
    size: row("File size (bytes)", "explain-size", size, sizeError),
    session: row(
      "Session",
      "explain-session",
      session,
      h(
        "span",
        { class: "help" },
        sessions.length === 0
          ? "The workspace has no session now: a tool or a file is explained on a session; open one first."
          : `${sessions.length} session(s) of this workspace; pick or paste an id.`,
      ),
    ),
  };
  const showFields = () => {
    const wanted = question.value;
    fields.image.hidden = wanted !== "image";
    fields.tool.hidden = wanted !== "tool";
    fields.size.hidden = wanted !== "file";
    fields.session.hidden = wanted === "image";
  };
  question.addEventListener("change", showFields);
  showFields();

  const form = h(
    "form",
    {
      class: "explain-form",
      on: {
        submit: (event) => {
          event.preventDefault();
          const bearer = token.value.trim();
          sizeError.textContent = "";
          let request: ExplainRequest;
          if (question.value === "image") {
            const asked = image.value.trim();
            request = { workspace, operation: "sessions.create", args: asked ? { image: asked } : {} };
          } else if (question.value === "tool") {
            const kind = tool.value as (typeof TOOLS)[number];
            request = {
              workspace,
              operation: "sessions.exec",
              args: { session_id: session.value.trim(), tool: kind, input: TOOL_INPUT[kind] },
            };
          } else {
            if (!/^\d+$/.test(size.value.trim())) {
              sizeError.textContent = "a whole number of bytes";
              return;
            }
            request = {
              workspace,
              operation: "files.put",
              args: { session_id: session.value.trim(), content_length: Number(size.value.trim()) },
            };
          }
          if (bearer) request = { ...request, token: bearer };
          api
            .explain(request)
            .then((result) => replace(answer, trace(result)))
            .catch((error: unknown) => {
              if (error instanceof AdminApiError)
                replace(
                  answer,
                  notice(
                    "error",
                    `${error.message}${error.problems.length ? `: ${error.problems.join("; ")}` : ""}`,
                  ),
                );
              else failed(error);
            });
        },
      },
    },
    h("h2", null, "Would this be allowed?"),
    row("Question", "question", question),
    Object.values(fields),
    row(
      "Token",
      "explain-token",
      token,
      h(
        "span",
        { class: "help" },
        "Would this token be allowed? Valid or not and why, and whose workspace it is: the rest is evaluated for that workspace. Not kept, not shown back.",
      ),
    ),
    h(
      "datalist",
      { id: "explain-sessions" },
      sessions.map((s) => h("option", { value: s.id }, `${s.image} (${s.state})`)),
    ),
    h("button", { type: "submit" }, "Explain"),
  );
  replace(area, form, answer);
}

function trace(result: ExplainAnswer): HTMLElement {
  const allowed = result.decision === "allow";
  return h(
    "div",
    { class: "trace" },
    h(
      "p",
      { class: `decision ${allowed ? "allow" : "deny"}` },
      allowed ? "Allowed" : `Refused: ${result.code}`,
      ` (${result.operation}, workspace ${result.workspace})`,
    ),
    result.token
      ? h(
          "p",
          { class: `token-verdict ${result.token.valid ? "allow" : "deny"}` },
          result.token.valid
            ? `Token: valid, of workspace ${result.token.workspace}${result.token.admin ? " (an admin token)" : ""}, until ${result.token.expires}`
            : `Token: refused (${result.token.reason})`,
        )
      : null,
    table(
      ["Step", "Verdict", "Rule", "Field", "Value", "Limit", "Why"],
      result.steps.map((step) => [
        step.step,
        h("span", { class: `verdict ${step.verdict}` }, step.verdict),
        step.rule ?? "",
        step.field ?? "",
        step.value === undefined ? "" : JSON.stringify(step.value),
        step.limit === undefined ? "" : JSON.stringify(step.limit),
        step.detail ?? step.code ?? "",
      ]),
      "No step.",
    ),
  );
}
