/**
 * Booting PGlite runs initdb, which takes ~10 s on this machine; booting from a dump of a
 * freshly initialised cluster takes ~2 s. The first test file to need one makes the dump
 * and leaves it in the temp folder (keyed by the PGlite version) for the others. The dump
 * holds an empty cluster only: every test still migrates from scratch.
 */
import { randomBytes } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PgliteProcess } from "../../../src/store/sql/pglite-process.js";

async function pgliteVersion(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  const manifest = JSON.parse(await readFile(join(dirname(entry), "..", "package.json"), "utf8"));
  return String(manifest.version);
}

export async function pgliteTemplate(): Promise<Blob> {
  const path = join(tmpdir(), `sandpool-test-pglite-${await pgliteVersion()}.tar`);
  try {
    return new Blob([await readFile(path)]);
  } catch {
    // Not made yet: make it below.
  }
  const fresh = await PGlite.create();
  const dump = await fresh.dumpDataDir("none");
  await fresh.close();
  // Write aside and rename, so a file running in parallel never reads half a dump.
  const partial = `${path}.${randomBytes(4).toString("hex")}.partial`;
  await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
  await rename(partial, path);
  return dump;
}

/** A PgliteProcess booted from the template dump . */
export async function openPgliteProcessFromTemplate(): Promise<PgliteProcess> {
  const dump = new Uint8Array(await (await pgliteTemplate()).arrayBuffer());
  return PgliteProcess.open({ loadDataDir: dump });
}
