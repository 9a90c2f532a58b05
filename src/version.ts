/**
 * sandpool's version: what `sandpool --version` prints and every answer's
 * `X-Sandpool-Version` header says. Read once from package.json, which ships beside dist/
 * (the compiled file sits at dist/version.js, the source at src/version.ts: one level down
 * either way).
 */
import { readFileSync } from "node:fs";

export const SANDPOOL_VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

export const VERSION_HEADER = "X-Sandpool-Version";
