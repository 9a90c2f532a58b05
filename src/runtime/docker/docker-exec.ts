/**
 * Runs a program in a sandbox's container through the engine's exec API, its stdout to a
 * file or a file to its stdin: how a plain container's workspace is saved and restored
 * (the engine's archive API does not see tmpfs mounts). A non-zero exit is an error that
 * quotes the program's stderr.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { PassThrough, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";

export interface ExecCommand {
  Cmd: string[];
  User: string;
}

const STDERR_KEPT = 2_000;

/**
 * The program's stdout into `file`, at most `maxBytes` of it within `timeoutMs`: what the
 * program prints, and when, is the sandbox's to choose (its code may stop the program), and
 * the host's disk and the caller's time are not (more fails the call, the file removed).
 */
export async function execToFile(
  engine: DockerEngine,
  container: Dockerode.Container,
  command: ExecCommand,
  file: string,
  limits: { maxBytes: number; timeoutMs: number },
): Promise<void> {
  const { exec, stream, stderr } = await startExec(engine, container, command, false);
  const stdout = new PassThrough();
  container.modem.demuxStream(stream, stdout, stderr.stream);
  stream.on("end", () => {
    stdout.end();
    stderr.stream.end();
  });
  try {
    await pipeline(stdout, capAt(limits.maxBytes, command), createWriteStream(file, { mode: 0o600 }), {
      signal: AbortSignal.timeout(limits.timeoutMs),
    });
  } catch (error) {
    (stream as unknown as { destroy(): void }).destroy();
    await rm(file, { force: true });
    throw error;
  }
  await assertExitedZero(exec, command, stderr.text());
}

export async function execWithInput(
  engine: DockerEngine,
  container: Dockerode.Container,
  command: ExecCommand,
  file: string,
): Promise<void> {
  const { exec, stream, stderr } = await startExec(engine, container, command, true);
  container.modem.demuxStream(stream, new PassThrough().resume(), stderr.stream);
  const ended = new Promise<void>((resolve, reject) => {
    stream.on("end", resolve);
    stream.on("close", resolve);
    stream.on("error", reject);
  });
  // Half-close after the file: the program sees the end of its input, the answer still flows.
  await pipeline(createReadStream(file), stream, { end: false });
  (stream as unknown as { end(): void }).end();
  await ended;
  await assertExitedZero(exec, command, stderr.text());
}

async function startExec(
  engine: DockerEngine,
  container: Dockerode.Container,
  command: ExecCommand,
  stdin: boolean,
): Promise<{ exec: Dockerode.Exec; stream: NodeJS.ReadWriteStream; stderr: ReturnType<typeof collect> }> {
  const exec = await engine.call(() =>
    container.exec({ ...command, AttachStdout: true, AttachStderr: true, AttachStdin: stdin }),
  );
  const stream = await engine.call(() => exec.start({ hijack: true, stdin }));
  return { exec, stream, stderr: collect() };
}

function capAt(maxBytes: number, command: ExecCommand): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > maxBytes) done(new Error(`${command.Cmd.join(" ")} printed more than ${maxBytes} bytes`));
      else done(null, chunk);
    },
  });
}

function collect(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  let kept = "";
  stream.on("data", (chunk: Buffer) => {
    if (kept.length < STDERR_KEPT) kept += chunk.toString("utf8").slice(0, STDERR_KEPT - kept.length);
  });
  return { stream, text: () => kept };
}

async function assertExitedZero(exec: Dockerode.Exec, command: ExecCommand, stderr: string): Promise<void> {
  // The exit code can lag the end of the stream by a moment.
  for (let attempt = 0; attempt < 50; attempt++) {
    const info = await exec.inspect();
    if (!info.Running) {
      if (info.ExitCode === 0) return;
      throw new Error(`${command.Cmd.join(" ")} exited with ${info.ExitCode}: ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${command.Cmd.join(" ")} did not finish`);
}
