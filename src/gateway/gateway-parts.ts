/**
 * The parts of one gateway, each built once at start-up (start-gateway.ts). Nothing takes
 * them whole: gateway-operations.ts hands each handler group the narrow part it declares
 * (ContractDeps, AdminDeps, ServiceDeps, the pipeline's PipelineDeps), and the transport its
 * own (GatewayAppDeps). A running gateway exposes them to its owner (tests, dev mode).
 */

import type { Logger } from "pino";
import type { Admission } from "../admission/admission.js";
import type { ApiKeyAdmin } from "../auth/api-key-admin.js";
import type { FailedAuthLimiter } from "../auth/failed-auth-limiter.js";
import type { BearerAuthenticator } from "../auth/principal.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { PendingWork } from "../deferred/pending-work.js";
import type { SandboxForwarder } from "../forward/sandbox-forwarder.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageReports } from "../metering/usage-report.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { PolicyAdmin } from "../policy/policy-admin.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { RuntimePoolSizes } from "../pool/pool-sizes.js";
import type { PoolStatus } from "../pool/pool-status.js";
import type { GatewayPools } from "../pool/sandbox-pool.js";
import type { NodeRegistry } from "../roles/shared/node-registry.js";
import type { SecretStore } from "../secrets/secret-store.js";
import type { SecretBinding, SecretsReader } from "../secrets/workspace-secrets.js";
import type { MetricsToken } from "../service-operations/metrics-token.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";
import type { AdminAuditRepository } from "../store/sql/admin-audit-repository.js";
import type { AuditRepository } from "../store/sql/audit-repository.js";
import type { UsageSummaryRow } from "../store/sql/usage-event.js";

export interface GatewayParts {
  log: Logger;
  metrics: GatewayMetrics;
  authenticator: BearerAuthenticator;
  authLimiter: FailedAuthLimiter;
  policies: PolicyService;
  admission: Admission;
  pools: GatewayPools;
  sessions: SessionLifecycle;
  /** A workspace's secret names (briefly cached): what a session may name in `sandpool.secrets`. */
  secretNames: (workspace: string) => Promise<string[]>;
  /** A workspace's secrets without their values (explain). */
  secretBindings: (workspace: string) => Promise<Array<{ name: string; binding: SecretBinding }>>;
  egressSettings: { allowPorts: readonly number[] };
  /** Calls on to the sandbox serving a session (one byte budget for the gateway). */
  forwarder: SandboxForwarder;
  usage: UsageSink;
  limits: GatewayConfig["limits"];
  /** Work routes let run on after their answers (an Execute's settlement); closing waits for it. */
  pending: PendingWork;
  /** The bearer token /metrics requires (`metrics.token`); unset, /metrics answers anyone. */
  metricsToken?: MetricsToken;
  /** Answers /readyz: false while the gateway cannot serve (start-up, shutdown, store down). */
  ready: () => Promise<boolean>;
  /** Workspace policy edits for the admin API (`/admin/v1`). */
  policyAdmin: PolicyAdmin;
  /** Workspace API keys for the admin API (`/admin/v1/keys`). */
  apiKeyAdmin: ApiKeyAdmin;
  /** Workspace secrets for the admin API (`/admin/v1/workspaces/{ws}/secrets`): values in, never out. */
  secretStore: SecretStore;
  /** The secrets' reading side: a workspace's credentials opened, for egress only (docs/secrets.md). */
  secrets: SecretsReader;
  /** A workspace's durable usage with `from <= occurredAt < to`, per kind and tool (admin API). */
  usageSummary: (workspace: string, from: Date, to: Date) => Promise<UsageSummaryRow[]>;
  /** Usage reports per hour or UTC day (admin API `GET /usage`). */
  usageReports: UsageReports;
  /** Every pool's spec, sizes in force and counts from the coordination store (admin API). */
  poolStatus: () => Promise<PoolStatus[]>;
  /** Pool sizes changed at run time (admin API `PATCH /pools/{name}`). */
  poolSizes: RuntimePoolSizes;
  /** The audit trail of operators' actions outside policy (a session ended, a pool resized). */
  adminAudit: AdminAuditRepository;
  /** The node registry (role edge): listing and an operator's drain. One host has none. */
  nodes?: NodeRegistry;
  /** Every audit trail in one read: refused calls and operators' changes (admin API `GET /audit`). */
  audit: AuditRepository;
}
