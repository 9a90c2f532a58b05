/**
 * How many Redis commands the hot path makes, counted as Redis' MONITOR shows them (an
 * EVALSHA is one, the commands a script runs inside are not; each command of a pipeline or
 * MULTI would count), through a real gateway on the Redis store with real sandbox servers.
 * Limits: two per Execute and per file call, three per warm CreateSession (admission, idle
 * lease, lease record). A call the replica's lease cache and budget allotment cannot serve
 * makes two: its begin, and its end, which goes alone since no begin follows within the
 * moment it waits for one to ride with (redis-call-steps.ts). A call they serve has its
 * begin written behind like its end: one script for both when they fall within that
 * moment, two when not.
 *
 * What a request makes is told apart from the rest by markers: a GET of a marker key from
 * another connection before and after it, which MONITOR shows in the order Redis ran them.
 * Nothing else may run meanwhile, so background jobs are on long intervals and the refill
 * behind a CreateSession (a warm-up of the pool, which runs after the answer and is not the
 * request's) is held back while counting and run afterwards. A budget allotment's return
 * after a quiet second is on a timer too, and not counted. The pools' demand exchange (one
 * script per pool a second, on a timer of its own) is not a request's and is left out.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContractClient } from "../../support/contract-client.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import {
  createRedisDeployment,
  type RedisDeployment,
  type RedisReplica,
} from "../../support/redis-gateways.js";
import { waitFor } from "../../support/wait-for.js";
import { postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;
const WORKSPACE = "team-count";

describe.skipIf(!available)("Redis commands on the hot path", () => {
  let deployment: RedisDeployment;
  let replica: RedisReplica;
  let client: ContractClient;
  let monitor: Redis;
  let marker: Redis;
  /** Commands on the deployment's keys, in the order Redis ran them (scripts' inner ones left out). */
  const seen: string[][] = [];
  let held: (() => Promise<void>)[] = [];
  let holdRefill = false;

  beforeAll(async () => {
    deployment = await createRedisDeployment({
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 2, maxTotal: 6 }],
      // No job may run while a request is counted: they are driven by hand here.
      intervals: { warmMs: 600_000, reapMs: 600_000, reconcileMs: 600_000, cpuMeterMs: 600_000 },
      // The usage drain (src/metering/usage-drainer.ts) is a background job too.
      usageBacklog: { drainMs: 600_000 },
    });
    replica = await deployment.startReplica();
    const pools = replica.gateway.services.pools;
    const warm = pools.warm.bind(pools);
    pools.warm = (pool) => {
      if (!holdRefill) return warm(pool);
      return new Promise<void>((resolve, reject) => {
        held.push(() => warm(pool).then(resolve, reject));
      });
    };
    await pools.warmAll();
    client = await replica.client(WORKSPACE);
    monitor = await new Redis(redisUrl).monitor();
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (source.includes("lua")) return;
      if (args.some((arg) => arg.startsWith(deployment.prefix))) seen.push(args);
    });
    marker = new Redis(redisUrl);
  }, 120_000);

  afterAll(async () => {
    monitor?.disconnect();
    marker?.disconnect();
    await deployment?.close();
  }, 60_000);

  let markers = 0;
  /** The commands `request` made, between two markers. */
  async function commandsOf(request: () => Promise<unknown>): Promise<string[]> {
    const id = ++markers;
    const begin = `${deployment.prefix}marker:begin:${id}`;
    const end = `${deployment.prefix}marker:end:${id}`;
    holdRefill = true;
    // The window opens on a quiet Redis: a warm-up that has just filled the pool still takes
    // a last look at it (an LRANGE of its idle list) after the test saw it full.
    await quietFor(150);
    await marker.get(begin);
    await request();
    // An Execute answers before its ending script's reply is in, and a stream's end is
    // settled as its last event goes out: wait for that work, and for Redis to have seen
    // nothing new of this deployment for a moment, so the call's last script falls inside
    // the window, not after its end marker.
    await replica.gateway.services.pending.drained();
    await quietFor(150);
    await marker.get(end);
    holdRefill = false;
    await waitFor(() => seen.some((args) => args[1] === end), 5_000);
    const from = seen.findIndex((args) => args[1] === begin);
    const to = seen.findIndex((args) => args[1] === end);
    // The pools' demand exchange runs on a timer of its own, not for any call, and so does the
    // return of a budget allotment after a quiet second (a steps script that names no lease,
    // redis-budget-allotments.ts): neither is counted.
    const commands = seen
      .slice(from + 1, to)
      .map(describeCommand)
      .filter((command) => !command.includes(":demand"))
      .filter((command) => !(command.includes(":deadlines") && !command.includes(":lease:")));
    const refills = held;
    held = [];
    // The refill held back runs now, and is over before the next request is counted.
    await Promise.all(refills.map((run) => run()));
    return commands;
  }

  /** Resolves once MONITOR has shown no command of the deployment for `ms` (2 s at most). */
  async function quietFor(ms: number): Promise<void> {
    const deadline = Date.now() + 2_000;
    let count = seen.length;
    let since = Date.now();
    while (Date.now() - since < ms && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (seen.length !== count) [count, since] = [seen.length, Date.now()];
    }
  }

  /** `EVALSHA <script keys>` or `GET <key>`: the command and the keys it names, without the prefix. */
  function describeCommand(args: string[]): string {
    const keys = args
      .filter((arg) => arg.startsWith(deployment.prefix))
      .map((k) => k.slice(deployment.prefix.length));
    return `${args[0]!.toUpperCase()} ${keys.join(" ")}`;
  }

  /** A call's scripts: its begin and end together, or apart (one of them awaited, or the call slower than the wait). */
  function expectOneOrTwo(commands: string[]) {
    expect(commands.length).toBeGreaterThanOrEqual(1);
    expect(commands.length).toBeLessThanOrEqual(2);
  }

  async function poolRefilled() {
    await waitFor(async () => (await replica.store.listIdle("default")).length >= 2, 30_000);
  }

  it("a warm CreateSession makes 3 commands; an Execute, a ListFiles, a PutFile and a GetFile 2 at most", async () => {
    // Once untimed, so the scripts are loaded (a first EVALSHA of a script Redis lacks is retried as EVAL).
    const first = await client.createSession();
    const firstId = (first.body as { session_id: string }).session_id;
    await client.run(firstId, "code_execution", { code: "print(1)" });
    await client.destroy(firstId);
    await poolRefilled();

    let created: Awaited<ReturnType<ContractClient["createSession"]>> | undefined;
    const createCommands = await commandsOf(async () => {
      created = await client.createSession();
    });
    expect(created!.status).toBe(201);
    expect(createCommands).toHaveLength(3);
    expect(createCommands.every((command) => command.startsWith("EVALSHA"))).toBe(true);
    const id = (created!.body as { session_id: string }).session_id;

    let output = "";
    const execCommands = await commandsOf(async () => {
      output = (await client.run(id, "code_execution", { code: "print(6 * 7)" })).stdout;
    });
    expect(output).toBe("42\n");
    expectOneOrTwo(execCommands);
    expect(execCommands.every((command) => command.startsWith("EVALSHA"))).toBe(true);

    // Started from the replica's copy of the lease: begin and end written behind.
    const again = await commandsOf(async () => {
      output = (await client.run(id, "code_execution", { code: "print(7 * 7)" })).stdout;
    });
    expect(output).toBe("49\n");
    expectOneOrTwo(again);
    expect(again.every((command) => command.startsWith("EVALSHA"))).toBe(true);

    const streamed = await commandsOf(async () => {
      const answer = await client.request("POST", `/sessions/${id}/exec`, {
        body: JSON.stringify({ tool: "bash_code_execution", input: { command: "echo hi" } }),
        headers: { "content-type": "application/json", accept: "text/event-stream" },
      });
      expect(answer.status).toBe(200);
      expect(answer.text).toContain("event: result");
    });
    expectOneOrTwo(streamed);

    const put = await commandsOf(async () => {
      expect((await client.putFile(id, "a,b\n1,2\n", { path: "data.csv" })).status).toBe(201);
    });
    expectOneOrTwo(put);
    const list = await commandsOf(async () => {
      expect((await client.listFiles(id)).status).toBe(200);
    });
    expectOneOrTwo(list);
    const get = await commandsOf(async () => {
      expect((await client.getFile(id, "data.csv")).text).toBe("a,b\n1,2\n");
    });
    expectOneOrTwo(get);

    // For the record: the commands by name, e.g. in a failure's message.
    expect({ createCommands, execCommands }).toMatchObject({
      createCommands: [
        expect.stringContaining(`{ws:${WORKSPACE}}:slots`),
        expect.stringContaining("{pool:default}:idle"),
        expect.stringContaining(`{ws:${WORKSPACE}}:lease:`),
      ],
      execCommands: execCommands.map(() => expect.stringContaining(`{ws:${WORKSPACE}}:deadlines`)),
    });
    await client.destroy(id);
  }, 120_000);

  it("each script of the hot path touches one workspace's or one pool's slot", async () => {
    await poolRefilled();
    const commands = await commandsOf(async () => {
      const created = await client.createSession();
      const id = (created.body as { session_id: string }).session_id;
      await client.run(id, "code_execution", { code: "print(1)" });
      await client.destroy(id);
    });
    for (const command of commands) {
      const tags = new Set([...command.matchAll(/\{[^}]+\}/g)].map((match) => match[0]));
      expect(tags.size, command).toBeLessThanOrEqual(1);
    }
  }, 60_000);
});
