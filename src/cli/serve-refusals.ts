/**
 * What `sandpool serve` refuses to run with, although the configuration itself is valid
 * (dev mode accepts it): each refusal names the setting and why, so the operator can fix
 * them all at once. Checked before any backend is contacted.
 */
import type { GatewayConfig } from "../config/gateway-config.js";

type ServeChecked = Pick<GatewayConfig, "runtime"> & {
  auth: Pick<GatewayConfig["auth"], "audience" | "anyAudience">;
};

export function refusedForServe(config: ServeChecked): string[] {
  const refused: string[] = [];
  if (config.runtime.kind === "process") {
    refused.push(
      "runtime.kind is process (SANDPOOL_RUNTIME or the configuration file): serve refuses the process " +
        "runtime, which runs user code as the gateway's own user, able to read its secrets (the token key, " +
        "database and Redis URLs); it is a dev-mode convenience only (`sandpool dev`). Use runtime.kind: docker",
    );
  }
  if (config.auth.audience === undefined && !config.auth.anyAudience) {
    refused.push(
      "auth.audience is not set: without it a token your issuer minted for any other service is accepted " +
        "here. Set auth.audience (SANDPOOL_JWT_AUDIENCE), or auth.anyAudience: true " +
        "(SANDPOOL_JWT_ANY_AUDIENCE) if every token of this issuer is meant for sandpool",
    );
  }
  return refused;
}
