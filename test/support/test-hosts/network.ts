/**
 * The test network: the switch namespace with its bridge and the root namespace's uplink,
 * and one namespace per host plugged into it. cut()/restore() take a host's switch port
 * down and up: the host keeps its address and processes but no packet reaches it or leaves
 * it, as when a machine's cable is pulled.
 */
import {
  hostAddress,
  hostNamespace,
  type Layout,
  netnsPath,
  rootAddress,
  rootLink,
  switchNamespace,
  switchPort,
} from "./layout.js";
import { ip, runCommand } from "./run-command.js";

/** IPv6 off in a namespace: no link-local chatter, only the test's IPv4 /24. */
async function disableIpv6(namespace: string): Promise<void> {
  await runCommand("nsenter", [
    `--net=${netnsPath(namespace)}`,
    "--",
    "sysctl",
    "-q",
    "-w",
    "net.ipv6.conf.all.disable_ipv6=1",
    "net.ipv6.conf.default.disable_ipv6=1",
  ]);
}

async function addNamespace(namespace: string): Promise<void> {
  await ip(["netns", "add", namespace]);
  await ip(["-n", namespace, "link", "set", "lo", "up"]);
  await disableIpv6(namespace);
}

export async function createSwitch(layout: Layout): Promise<void> {
  const sw = switchNamespace(layout);
  const uplink = rootLink(layout);
  await addNamespace(sw);
  await ip(["-n", sw, "link", "add", "br0", "type", "bridge", "forward_delay", "0", "stp_state", "0"]);
  await ip(["-n", sw, "link", "set", "br0", "up"]);
  await ip(["link", "add", uplink, "type", "veth", "peer", "name", "uplink", "netns", sw]);
  // Before the link comes up, so it never sends a router solicitation.
  await runCommand("sysctl", ["-q", "-w", `net.ipv6.conf.${uplink}.disable_ipv6=1`]);
  await ip(["addr", "add", `${rootAddress(layout)}/24`, "dev", uplink]);
  await ip(["link", "set", uplink, "up"]);
  await ip(["-n", sw, "link", "set", "uplink", "master", "br0", "up"]);
}

export async function createHostNetwork(layout: Layout, index: number): Promise<void> {
  const sw = switchNamespace(layout);
  const ns = hostNamespace(layout, index);
  await addNamespace(ns);
  await ip(["-n", sw, "link", "add", switchPort(index), "type", "veth", "peer", "name", "eth0", "netns", ns]);
  await ip(["-n", sw, "link", "set", switchPort(index), "master", "br0", "up"]);
  await ip(["-n", ns, "addr", "add", `${hostAddress(layout, index)}/24`, "dev", "eth0"]);
  await ip(["-n", ns, "link", "set", "eth0", "up"]);
}

export async function setHostLink(layout: Layout, index: number, up: boolean): Promise<void> {
  await ip(["-n", switchNamespace(layout), "link", "set", switchPort(index), up ? "up" : "down"]);
}

/**
 * Refuses a subnet something on this machine already uses (outside our own namespaces):
 * the tests must never send a packet to an address that is not theirs.
 */
export async function assertSubnetFree(layout: Layout): Promise<void> {
  const prefix = new RegExp(`(^|[^\\d.])${layout.subnet.replaceAll(".", "\\.")}\\.`);
  const addresses = await ip(["-4", "-o", "addr", "show"]);
  const routes = await ip(["-4", "route", "show", "table", "all"]);
  const clash = [...addresses.split("\n"), ...routes.split("\n")].find((line) => prefix.test(line));
  if (clash) {
    throw new Error(
      `the test network ${layout.subnet}.0/24 is already in use on this machine (${clash.trim()}); ` +
        "pass another subnet to startTestHosts",
    );
  }
}
