/**
 * How `sandpool explain` shows a decision trace to people (--json prints the admin API's answer
 * as it is); policy values read as `sandpool policy get` shows them.
 */
import { errorStatus, isErrorCode } from "../../contract/error-codes.js";
import type { AdminBody } from "../admin/admin-client.js";
import { table } from "../admin/admin-render.js";
import { formatPolicyValue } from "./policy-render.js";

/** Explain's answer as the generated admin client types it. */
type ExplainAnswer = AdminBody<"post", "/admin/v1/explain">;

export function renderExplain(answer: ExplainAnswer): string {
  const status =
    answer.code === null
      ? ""
      : ` (${isErrorCode(answer.code) ? `${errorStatus[answer.code]} ` : ""}${answer.code})`;
  const heading = `${answer.operation} for workspace ${answer.workspace}: ${answer.decision.toUpperCase()}${status}`;
  const token = answer.token
    ? answer.token.valid
      ? `\ntoken: valid, of workspace ${answer.token.workspace}${answer.token.admin ? " (an admin token)" : ""}, until ${answer.token.expires}`
      : `\ntoken: refused (${answer.token.reason})`
    : "";
  const steps = table(
    ["STEP", "VERDICT", "RULE", "FIELD", "VALUE", "LIMIT", "DETAIL"],
    answer.steps.map((step) => [
      step.step,
      step.verdict === "deny" ? `deny ${step.code ?? ""}`.trim() : step.verdict,
      step.rule ?? "-",
      step.field ?? "-",
      formatPolicyValue(step.field, step.value),
      formatPolicyValue(step.field, step.limit),
      step.detail ?? "",
    ]),
  );
  const effective = table(
    ["EFFECTIVE", "VALUE"],
    Object.entries(answer.effective).map(([field, value]) => [field, formatPolicyValue(field, value)]),
  );
  return `${heading}${token}\n\n${steps}\n\n${effective}${answer.egress ? `\n\n${renderEgress(answer.egress)}` : ""}`;
}

/** The destination's own trace (`--egress-host`): names of secrets only, never values. */
function renderEgress(egress: NonNullable<ExplainAnswer["egress"]>): string {
  const secrets = egress.secrets.length === 0 ? "no secret" : `secrets: ${egress.secrets.join(", ")}`;
  const heading = `egress to ${egress.destination}: ${egress.decision.toUpperCase()} (${secrets})`;
  const steps = table(
    ["RULE", "VERDICT", "VALUE", "DETAIL"],
    egress.steps.map((step) => [
      step.rule ?? "-",
      step.verdict,
      step.value === undefined ? "-" : JSON.stringify(step.value),
      step.detail ?? "",
    ]),
  );
  return `${heading}\n\n${steps}`;
}
