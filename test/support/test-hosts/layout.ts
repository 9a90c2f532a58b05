/**
 * Where the test hosts live: names, addresses and directories, in one place so that the
 * start-up, the clean-up and the sweep of a killed run agree on them.
 *
 *   root namespace   spth<run>  10.213.0.1/24 ─┐
 *                                              │ veth
 *   sandpool-th-<run>-sw (the "switch")   uplink ── br0 ── h0 ── h1 ...
 *                                                           │ veth
 *   sandpool-th-<run>-0 (host 0)                          eth0 10.213.0.10/24, lo
 *
 * The switch is a namespace of its own so that hosts reach each other through a bridge with
 * empty netfilter tables: the root namespace's firewall (Docker's FORWARD DROP) is never
 * touched and the root namespace forwards nothing. No namespace has a default route.
 */
import path from "node:path";

export const NAMESPACE_PREFIX = "sandpool-th-";
/** Root-namespace interfaces (the switch's uplink): `spth<run>`, within the 15-byte limit. */
export const LINK_PREFIX = "spth";
export const DEFAULT_SUBNET = "10.213.0";
export const DEFAULT_RUN_DIR = "/run/sandpool-test-hosts";
export const DEFAULT_CACHE_DIR = "/var/lib/sandpool-test-hosts";
/** Host i is at <subnet>.(HOST_OFFSET + i); the root namespace at <subnet>.1. */
const HOST_OFFSET = 10;
export const MAX_HOSTS = 200;

export interface Layout {
  run: string;
  /** The first three octets of the /24 the test network uses. */
  subnet: string;
  runDir: string;
  cacheDir: string;
}

export const switchNamespace = (layout: Layout) => `${NAMESPACE_PREFIX}${layout.run}-sw`;
export const hostNamespace = (layout: Layout, index: number) => `${NAMESPACE_PREFIX}${layout.run}-${index}`;
export const netnsPath = (name: string) => `/var/run/netns/${name}`;
export const rootLink = (layout: Layout) => `${LINK_PREFIX}${layout.run}`;
/** The host's port on the switch (in the switch namespace); the host's own end is eth0. */
export const switchPort = (index: number) => `h${index}`;
export const rootAddress = (layout: Layout) => `${layout.subnet}.1`;
export const hostAddress = (layout: Layout, index: number) => `${layout.subnet}.${HOST_OFFSET + index}`;
export const hostRunDir = (layout: Layout, index: number) => path.join(layout.runDir, String(index));
/** The engine's data root: kept between runs, so images are loaded once. */
export const hostDataRoot = (layout: Layout, index: number) => path.join(layout.cacheDir, String(index));
export const lockFile = (runDir: string) => path.join(runDir, "lock");
/** Containers of host i's engine go below this cgroup, so a sweep finds them after a crash. */
export const hostCgroupParent = (index: number) => `${NAMESPACE_PREFIX}${index}`;
