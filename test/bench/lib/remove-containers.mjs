/**
 * Removes every container of a bench's deployment (its `sandpool.deployment` label). A
 * gateway stopping at the same time may be removing some of them itself: a container already
 * gone, or whose removal is in progress, is not an error, so the rest of a clean-up (keys,
 * database) still runs.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
const GONE = /No such container|removal of container \S+ is already in progress/;

export async function removeLabelledContainers(deployment) {
  const { stdout } = await run("docker", [
    "ps",
    "-aq",
    "--filter",
    `label=sandpool.deployment=${deployment}`,
  ]);
  const ids = stdout.split("\n").filter(Boolean);
  if (ids.length === 0) return;
  try {
    await run("docker", ["rm", "-f", ...ids]);
  } catch (error) {
    const problems = String(error.stderr ?? "")
      .split("\n")
      .filter((line) => line.trim() !== "");
    if (problems.length === 0 || !problems.every((line) => GONE.test(line))) throw error;
  }
}
