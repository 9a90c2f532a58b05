/**
 * What the test hosts need from the machine, each missing piece named with what provides it:
 * root (namespaces, veths, a dockerd), iproute2's `ip`, util-linux's `nsenter`, `dockerd` and
 * the `docker` client, the main engine answering, and the images on it (they are copied from
 * there into every host's engine; nothing is ever pulled).
 */
import Dockerode from "dockerode";
import { imageId } from "./engine.js";
import { runCommand } from "./run-command.js";

export class TestHostsUnavailableError extends Error {}

async function requireCommand(file: string, args: string[], provide: string): Promise<void> {
  try {
    await runCommand(file, args, { timeoutMs: 5_000 });
  } catch (error) {
    throw new TestHostsUnavailableError(`${(error as Error).message}; ${provide}`);
  }
}

export async function checkPrerequisites(images: string[]): Promise<void> {
  if (process.platform !== "linux")
    throw new TestHostsUnavailableError("test hosts need Linux (network namespaces)");
  if (process.getuid?.() !== 0) {
    throw new TestHostsUnavailableError(
      "test hosts need root (ip netns, veth pairs, a dockerd each): run as root",
    );
  }
  await requireCommand("ip", ["netns", "list"], "install it with `apt-get install iproute2`");
  await requireCommand("nsenter", ["--version"], "install it with `apt-get install util-linux`");
  await requireCommand("dockerd", ["--version"], "install it with `bash scripts/start-docker.sh`");
  await requireCommand(
    "docker",
    ["version", "--format", "{{.Server.Version}}"],
    "start it with `bash scripts/start-docker.sh`",
  );
  const main = new Dockerode({ timeout: 5_000 });
  for (const image of images) {
    if ((await imageId(main, image)) === undefined) {
      throw new TestHostsUnavailableError(
        `the image ${image} is not on the main Docker engine (test hosts copy it from there): ` +
          "build it with `npm run build:sandbox-image`",
      );
    }
  }
}
