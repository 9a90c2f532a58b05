/**
 * The editable fields of a workspace's policy row, as operators write them. Null or
 * absent means "no narrowing". Writing a value above the deployment's ceiling is refused
 * (422) rather than silently clamped, so an operator never believes a limit is in force
 * that is not.
 */

import type { z } from "zod";
import { malformed } from "../contract/error-codes.js";
import { issueProblems } from "../contract/schemas.js";
import type { DeploymentPolicy } from "../policy-schema/deployment-policy.js";
import { cidrWithin, hostPatternWithin } from "../policy-schema/egress-patterns.js";
import { ceilingFields, ceilingOf, policyEditSchema } from "../policy-schema/policy-fields.js";

/** An edit's shape, derived from the table of fields (policy-fields.ts): the admin API's body. */
export const workspacePolicyFieldsSchema = policyEditSchema;

export type WorkspacePolicyFields = z.output<typeof workspacePolicyFieldsSchema>;

/** Numeric fields, each clamped to a deployment ceiling: a row may only lower them. */
export { ceilingFields };

/**
 * Parses an edit and checks it against the deployment: every problem is listed in one
 * 422 so an operator fixes them all at once.
 */
export function validatePolicyEdit(
  input: unknown,
  deployment: DeploymentPolicy,
  resourceClasses: readonly string[],
): WorkspacePolicyFields {
  const parsed = workspacePolicyFieldsSchema.safeParse(input);
  if (!parsed.success) throw malformed(issueProblems(parsed.error, workspacePolicyFieldsSchema));
  const fields = parsed.data;
  const problems: string[] = [];
  for (const field of ceilingFields) {
    const value = fields[field];
    const ceiling = deployment[ceilingOf(field)];
    if (typeof value === "number" && value > ceiling) {
      problems.push(`${field}: ${value} is above the deployment ceiling of ${ceiling}`);
    }
  }
  for (const image of fields.allowedImages ?? []) {
    if (!deployment.allowedImages.includes(image))
      problems.push(`allowedImages: '${image}' is not allowed by the deployment`);
  }
  for (const tool of fields.allowedTools ?? []) {
    if (!deployment.allowedTools.includes(tool))
      problems.push(`allowedTools: '${tool}' is not allowed by the deployment`);
  }
  if (fields.defaultImage != null) {
    const images = fields.allowedImages ?? deployment.allowedImages;
    if (!images.includes(fields.defaultImage))
      problems.push(`defaultImage: '${fields.defaultImage}' is not an allowed image`);
  }
  if (fields.resourceClass != null && !resourceClasses.includes(fields.resourceClass)) {
    problems.push(
      `resourceClass: '${fields.resourceClass}' has no pool (known: ${resourceClasses.join(", ")})`,
    );
  }
  if (fields.isolation === "container" && deployment.isolation === "gvisor") {
    problems.push(
      "isolation: the deployment requires gvisor; a workspace may only raise isolation, never lower it",
    );
  }
  if (fields.egressAllowed === true && !deployment.egressAllowed) {
    problems.push("egressAllowed: the deployment does not allow egress");
  }
  problems.push(...egressListProblems(fields, deployment));
  if (problems.length > 0) throw malformed(problems);
  return fields;
}

/**
 * The egress lists narrow like allowedImages: the deployment's lists are both what a
 * workspace without a row gets and the ceiling of a row. A row's range must lie inside one
 * of the deployment's ranges; a row's host pattern must be covered by the deployment's
 * patterns when the deployment restricts hosts at all. An empty host list means "any host",
 * so a row may not write one under a deployment that restricts hosts.
 */
function egressListProblems(fields: WorkspacePolicyFields, deployment: DeploymentPolicy): string[] {
  const problems: string[] = [];
  for (const cidr of fields.egressAllowCidrs ?? []) {
    if (!cidrWithin(cidr, deployment.egressAllowCidrs)) {
      const ceiling = deployment.egressAllowCidrs.join(", ") || "none";
      problems.push(
        `egressAllowCidrs: '${cidr}' is not within the deployment's egressAllowCidrs (${ceiling})`,
      );
    }
  }
  const hosts = fields.egressAllowHosts;
  if (hosts != null && deployment.egressAllowHosts.length > 0) {
    if (hosts.length === 0)
      problems.push("egressAllowHosts: an empty list allows any host, wider than the deployment's list");
    for (const host of hosts) {
      if (!hostPatternWithin(host, deployment.egressAllowHosts))
        problems.push(`egressAllowHosts: '${host}' is not covered by the deployment's egressAllowHosts`);
    }
  }
  return problems;
}
