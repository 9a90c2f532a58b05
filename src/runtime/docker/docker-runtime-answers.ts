/**
 * What the docker runtime answers besides a started sandbox: its sandboxes as listed, each
 * engine's status and registered OCI runtimes, where a start's time went, and the error of a
 * listing some engine did not answer.
 */
import { PartialListError, type RuntimeSandbox } from "../sandbox-runtime.js";
import type { RegisteredRuntime } from "./docker-engine.js";

export interface EngineStatus {
  index: number;
  host: string;
  /** Answered just now. */
  up: boolean;
  /** Running containers of this deployment (0 when down). */
  containers: number;
  /** Why it is down. */
  problem?: string;
}

/**
 * list() could not ask every engine: `partial` holds what the others answered. Reconciling
 * against a partial list would take the unreachable engines' sandboxes for lost, so list()
 * throws; a caller that knows better can use `partial` for the engines that did answer.
 */
export class DockerEnginesUnreachableError extends PartialListError {
  override readonly name = "DockerEnginesUnreachableError";
  constructor(
    readonly unreachable: { index: number; host: string; problem: string }[],
    override readonly partial: DockerSandbox[],
  ) {
    super(
      `Docker engine(s) not answering: ${unreachable.map((e) => `${e.host} (${e.problem})`).join(", ")}`,
      partial,
    );
  }
}

export interface DockerSandbox extends RuntimeSandbox {
  createdAt: number;
  /** Its pool allows egress: it has a proxy socket to serve. */
  egress: boolean;
  /** False for a container that exited (crashed, killed, out of memory): its sandbox is gone. */
  running: boolean;
}

export interface EngineRuntimes {
  host: string;
  runtimes?: Record<string, RegisteredRuntime>;
  /** Why the engine did not answer. */
  problem?: string;
}

export interface StartTimings {
  placeMs: number;
  createMs: number;
  startMs: number;
  readyMs: number;
  totalMs: number;
}
