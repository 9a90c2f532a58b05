/** zod schemas of egress allow-list entries, for the configuration and policy edits. */
import { z } from "zod";
import { cidrProblem, hostPatternProblem } from "./egress-patterns.js";

function checked(problemOf: (value: string) => string | undefined, maxLength: number) {
  return z
    .string()
    .max(maxLength)
    .superRefine((value, ctx) => {
      const problem = problemOf(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    });
}

/** `10.1.0.0/16`, `2001:db8::/32`. */
export const cidrSchema = checked(cidrProblem, 64);

/** `pypi.org`, or `*.pythonhosted.org` for every name below it. */
export const hostPatternSchema = checked(hostPatternProblem, 255);
