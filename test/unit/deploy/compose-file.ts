/** docker-compose.yml as the deploy tests read it: parsed, with compose's interpolation applied. */
import path from "node:path";
import { interpolateAll, readText, readYaml, repoPath } from "./deploy-files.js";

export interface ComposeService {
  image?: string;
  build?: string | { context: string; dockerfile?: string; target?: string };
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | { host_ip?: string; published?: string | number; target: number })[];
  volumes?: (string | { type: string; source?: string; target: string; read_only?: boolean })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string[] | string; disable?: boolean };
  network_mode?: string;
  profiles?: string[];
  stop_grace_period?: string;
  group_add?: (string | number)[];
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** What the test environment sets: only what compose requires, so the file's defaults apply. */
export const composeEnv = {
  DOCKER_GID: "999",
  SANDPOOL_JWT_SECRET: "a-compose-test-secret-of-32-bytes-or-more",
};

export const compose = interpolateAll(readYaml<ComposeFile>("docker-compose.yml"), composeEnv);

export function service(name: string): ComposeService {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service '${name}'`);
  return found;
}

export function environmentOf(entry: ComposeService): Record<string, string> {
  const environment = entry.environment ?? {};
  if (Array.isArray(environment))
    return Object.fromEntries(
      environment.map((item) => [item.slice(0, item.indexOf("=")), item.slice(item.indexOf("=") + 1)]),
    );
  return Object.fromEntries(Object.entries(environment).map(([key, value]) => [key, String(value ?? "")]));
}

export function commandOf(entry: ComposeService): string[] {
  if (entry.command === undefined) return [];
  return Array.isArray(entry.command) ? entry.command : entry.command.split(/\s+/);
}

export interface Mount {
  /** Absolute for bind mounts (resolved from the project directory), else a volume's name. */
  source: string;
  target: string;
  bind: boolean;
}

export function mountsOf(entry: ComposeService): Mount[] {
  return (entry.volumes ?? []).map((volume) => {
    const [source, target] =
      typeof volume === "string" ? volume.split(":") : [volume.source ?? "", volume.target];
    const bind = source!.startsWith("/") || source!.startsWith(".");
    return { source: bind ? path.resolve(repoPath(), source!) : source!, target: target!, bind };
  });
}

/** The host file or directory bind-mounted at `target` in `entry`. */
export function mountedAt(entry: ComposeService, target: string): string {
  const mount = mountsOf(entry).find((m) => m.target === target && m.bind);
  if (!mount) throw new Error(`nothing is mounted at ${target}`);
  return mount.source;
}

export interface Build {
  context: string;
  dockerfile: string;
  /** The Dockerfile stage built; undefined is the last one. */
  target?: string;
}

/** The build's context and Dockerfile as absolute paths (the Dockerfile is relative to the context). */
export function buildOf(entry: ComposeService): Build | undefined {
  if (entry.build === undefined) return undefined;
  const build = typeof entry.build === "string" ? { context: entry.build } : entry.build;
  const context = path.resolve(repoPath(), build.context);
  return {
    context,
    dockerfile: path.resolve(context, build.dockerfile ?? "Dockerfile"),
    ...(build.target === undefined ? {} : { target: build.target }),
  };
}

/** Host ports a service publishes, as `[hostIp, hostPort, containerPort]`. */
export function publishedPorts(entry: ComposeService): [string, number, number][] {
  return (entry.ports ?? []).map((port) => {
    if (typeof port !== "string")
      return [port.host_ip ?? "0.0.0.0", Number(port.published ?? port.target), port.target];
    const parts = port.split(":");
    if (parts.length === 3) return [parts[0]!, Number(parts[1]), Number(parts[2])];
    if (parts.length === 2) return ["0.0.0.0", Number(parts[0]), Number(parts[1])];
    return ["0.0.0.0", Number(parts[0]), Number(parts[0])];
  });
}

/** The bundle directory deploy/sandbox/bundle.mjs writes by default (generated, not committed). */
export function sandboxBundleDir(): string {
  const match = /outfile: \{ type: "string", default: "([^"]+)" \}/.exec(
    readText("deploy/sandbox/bundle.mjs"),
  );
  if (!match) throw new Error("deploy/sandbox/bundle.mjs: cannot find the default --outfile");
  return path.dirname(repoPath(match[1]!));
}
