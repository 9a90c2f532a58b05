/**
 * What every suite that runs docker sandboxes shares: the gate (a Docker engine with the
 * image: skipped loudly locally, failing under CI=true) and the clean-up of everything a
 * suite's deployment label marks, whatever state a failed test left it in.
 */
import Dockerode from "dockerode";
import { dockerAvailable, dockerImageAvailable, requireService } from "./require-service.js";

export const SANDBOX_IMAGE = "sandpool/sandbox:dev";

export async function dockerSuiteAvailable(image = SANDBOX_IMAGE): Promise<boolean> {
  return (
    (await requireService("docker", dockerAvailable, { start: "bash scripts/start-docker.sh (as root)" })) &&
    (await requireService(`docker image ${image}`, () => dockerImageAvailable(image), {
      start: "npm run build:sandbox-image",
    }))
  );
}

/**
 * The docker suite's gate, plus gVisor: the engine has runsc registered (scripts/start-docker.sh
 * does it), so suites parameterised over isolation levels run their gvisor half too.
 */
export async function gvisorSuiteAvailable(image = SANDBOX_IMAGE): Promise<boolean> {
  return (
    (await dockerSuiteAvailable(image)) &&
    (await requireService("gVisor (the engine's runtime runsc)", gvisorRegistered, {
      start: "bash scripts/start-docker.sh (as root)",
    }))
  );
}

async function gvisorRegistered(): Promise<boolean> {
  const info = (await new Dockerode().info()) as { Runtimes?: Record<string, unknown> };
  if (info.Runtimes?.runsc === undefined)
    throw new Error("the Docker engine has no runtime 'runsc' registered");
  return true;
}

/** Removes every container labelled with the deployment, running or not. */
export async function removeDeploymentContainers(deployment: string): Promise<void> {
  const docker = new Dockerode();
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`sandpool.deployment=${deployment}`] },
  });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
}

/** Whether the container a runtime id names (`<engine>:<container id>`) is running on the local engine. */
export async function containerRunning(runtimeId: string): Promise<boolean> {
  return new Dockerode()
    .getContainer(runtimeId.split(":")[1]!)
    .inspect()
    .then(
      (info) => info.State.Running,
      () => false,
    );
}
