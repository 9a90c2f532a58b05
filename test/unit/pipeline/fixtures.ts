/** What the pipeline's unit tests share: real authentication (HS256), metrics, and callers. */

import { authConfigSchema } from "../../../src/auth/auth-config.js";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { FailedAuthLimiter } from "../../../src/auth/failed-auth-limiter.js";
import { JwtAuthenticator } from "../../../src/auth/jwt-authenticator.js";
import type { Caller, Principal } from "../../../src/auth/principal.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import type { UsageEventInput, UsageSink } from "../../../src/metering/usage-sink.js";

export const SECRET = "a-pipeline-test-secret-of-at-least-32-bytes";

export function check() {
  return {
    authenticator: new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: SECRET })),
    authLimiter: new FailedAuthLimiter(),
    metrics: new GatewayMetrics({ processMetrics: false }),
  };
}

export const bearer = async (options: { workspace?: string; admin?: boolean }) =>
  `Bearer ${await mintToken({ secret: SECRET, ...options })}`;

export const workspaceCaller: Principal = {
  workspace: "ws-1",
  subject: "alice",
  tokenId: undefined,
  expiresAt: Math.floor(Date.now() / 1000) + 600,
};
export const adminCaller: Caller = { ...workspaceCaller, workspace: undefined, admin: true, subject: "ops" };

/** A usage sink that keeps what it is given, to read back. */
export class KeptUsage implements UsageSink {
  readonly events: UsageEventInput[] = [];
  record(event: UsageEventInput): void {
    this.events.push(event);
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

export async function authFailures(metrics: GatewayMetrics, reason: string): Promise<number> {
  const metric = await metrics.authFailures.get();
  return metric.values.find((value) => value.labels.reason === reason)?.value ?? 0;
}
