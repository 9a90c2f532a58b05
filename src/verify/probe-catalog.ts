/** Every probe of `sandpool verify`, in the order they run and are reported. */
import type { Probe } from "./probe.js";
import { configLeakProbes } from "./probes/config-leaks.js";
import { egressChecks } from "./probes/egress-checks.js";
import { fileLeakProbes } from "./probes/file-leaks.js";
import { gatewayChecks } from "./probes/gateway-checks.js";
import { interpreterLeakProbes } from "./probes/interpreter-leaks.js";
import { ipcLeakProbes } from "./probes/ipc-leaks.js";
import { processLeakProbes } from "./probes/process-leaks.js";
import { reachChecks } from "./probes/reach-checks.js";
import { resourceChecks } from "./probes/resource-checks.js";
import { secretChecks } from "./probes/secret-checks.js";
import { usageChecks } from "./probes/usage-checks.js";

export const PROBES: readonly Probe[] = [
  ...fileLeakProbes,
  ...processLeakProbes,
  ...ipcLeakProbes,
  ...interpreterLeakProbes,
  ...configLeakProbes,
  ...reachChecks,
  ...egressChecks,
  ...secretChecks,
  ...resourceChecks,
  ...gatewayChecks,
  ...usageChecks,
];

/** Probes that read what only an operator may (the admin API): run only with --admin-token. */
export const ADMIN_PROBES: ReadonlySet<string> = new Set(
  [...usageChecks, ...secretChecks].map((probe) => probe.name),
);
