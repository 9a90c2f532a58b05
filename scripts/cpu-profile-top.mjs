#!/usr/bin/env node
/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, as `bench:churn --profile DIR` and
 * `bench:exec-cpu --profile DIR` write): self time per function and per source file, the
 * largest first, as a share of the samples that were not idle. What a profile viewer shows,
 * in a form a terminal (and a commit message) can hold.
 *
 *   node scripts/cpu-profile-top.mjs PROFILE.cpuprofile [--top N]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "25" }, help: { type: "boolean", short: "h" } },
});
if (values.help || positionals.length !== 1) {
  console.log("usage: node scripts/cpu-profile-top.mjs PROFILE.cpuprofile [--top N]");
  process.exit(values.help ? 0 : 2);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0], "utf8"));

/** Samples per node id; each sample's time is the gap to the next one. */
const selfMs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
  selfMs.set(profile.samples[i], (selfMs.get(profile.samples[i]) ?? 0) + ms);
}

// Idle and the garbage collector are shown apart: they are not any function's own work.
const APART = new Set(["(idle)", "(program)", "(garbage collector)"]);
const byFunction = new Map();
const byFile = new Map();
const apart = new Map();
let busy = 0;
for (const node of profile.nodes) {
  const ms = selfMs.get(node.id) ?? 0;
  if (ms === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  if (APART.has(functionName)) {
    apart.set(functionName, (apart.get(functionName) ?? 0) + ms);
    continue;
  }
  busy += ms;
  const file = shortPath(url) || "(native)";
  const name = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
  byFile.set(file, (byFile.get(file) ?? 0) + ms);
}

function shortPath(url) {
  return url
    .replace(/^file:\/\//, "")
    .replace(/^.*\/node_modules\//, "npm:")
    .replace(/^.*\/dist\//, "dist/");
}

function print(title, table) {
  console.log(`\n${title}`);
  for (const [name, ms] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${ms.toFixed(0).padStart(8)} ms ${((100 * ms) / busy).toFixed(1).padStart(5)}%  ${name}`);
  }
}

const total = (profile.endTime - profile.startTime) / 1000;
console.log(
  `profile of ${(total / 1000).toFixed(1)} s: ${busy.toFixed(0)} ms in functions, ` +
    [...apart].map(([name, ms]) => `${ms.toFixed(0)} ms ${name}`).join(", "),
);
print("self time by source file", byFile);
print("self time by function", byFunction);
