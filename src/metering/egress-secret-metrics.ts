/**
 * Uses of workspace secrets by the egress proxy: one count per request a secret was added
 * to. Labels are bounded by what operators configure: the workspace, the secret's name and
 * the binding's host pattern that matched (never the host a sandbox asked for).
 */
import { Counter, type Registry } from "prom-client";

export function egressSecretUsesCounter(registry: Registry): Counter<"workspace" | "secret" | "host"> {
  return new Counter({
    name: "sandpool_egress_secret_uses_total",
    help: "Requests the egress proxy added a workspace secret to, by workspace, secret name and the binding's host pattern that matched",
    labelNames: ["workspace", "secret", "host"] as const,
    registers: [registry],
  });
}
