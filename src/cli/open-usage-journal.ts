/**
 * `sandpool serve`'s usage journal (src/metering/usage-journal.ts): in `usageBacklog.journalDir`,
 * or by default under the OS temp directory, one directory per deployment (two deployments on
 * one host never replay each other's records into the wrong backlog).
 */
import { tmpdir } from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { UsageJournal } from "../metering/usage-journal.js";
import type { UsageBacklog } from "../store/coordination/usage-backlog.js";

export function usageJournalDirectory(config: GatewayConfig): string {
  return config.usageBacklog.journalDir ?? path.join(tmpdir(), "sandpool-usage-journal", config.deployment);
}

export function openUsageJournal(
  config: GatewayConfig,
  backlog: Pick<UsageBacklog, "appendUsage">,
  log: Logger,
): UsageJournal {
  return UsageJournal.open({
    directory: usageJournalDirectory(config),
    replayAfterMs: config.usageBacklog.journalReplayAfterMs,
    backlog,
    log,
  });
}
