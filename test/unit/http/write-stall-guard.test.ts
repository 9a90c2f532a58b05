/**
 * The guard's clock: a stalled client is cut off after stallMs of sweeps that saw its backlog
 * unmoved, but time the gateway itself was not running (a blocked event loop) is not counted
 * against the client. A stand-in response is enough: the real socket is in write-stall.test.ts.
 */
import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WriteStallGuard } from "../../../src/http/common/write-stall-guard.js";

const STALL_MS = 400;
const EVERY_MS = STALL_MS / 4;

function stuckResponse() {
  const socket = { writableLength: 1000, destroy: vi.fn() };
  const res = { socket, once: () => res } as unknown as ServerResponse;
  return { res, socket };
}

describe("WriteStallGuard", () => {
  let guard: WriteStallGuard;
  beforeEach(() => {
    vi.useFakeTimers();
    guard = new WriteStallGuard(STALL_MS);
  });
  afterEach(() => {
    guard.close();
    vi.useRealTimers();
  });

  it("cuts off a backlog that has not moved for the stall timeout", () => {
    const { res, socket } = stuckResponse();
    guard.watch(res);
    vi.advanceTimersByTime(STALL_MS);
    expect(socket.destroy).not.toHaveBeenCalled();
    vi.advanceTimersByTime(2 * EVERY_MS);
    expect(socket.destroy).toHaveBeenCalledOnce();
  });

  it("keeps a backlog that moves", () => {
    const { res, socket } = stuckResponse();
    guard.watch(res);
    for (let i = 0; i < 20; i++) {
      socket.writableLength -= 10;
      vi.advanceTimersByTime(EVERY_MS);
    }
    expect(socket.destroy).not.toHaveBeenCalled();
  });

  it("keeps a single large write that drains: only libuv's queue moves", () => {
    const { res, socket } = stuckResponse();
    const handle = { writeQueueSize: 1000 };
    Object.assign(socket, { _handle: handle });
    guard.watch(res);
    for (let i = 0; i < 20; i++) {
      handle.writeQueueSize -= 10;
      vi.advanceTimersByTime(EVERY_MS);
    }
    expect(socket.destroy).not.toHaveBeenCalled();
  });

  it("does not count a blocked event loop against the client", () => {
    const { res, socket } = stuckResponse();
    guard.watch(res);
    vi.advanceTimersByTime(EVERY_MS);
    // The process is blocked for twice the stall timeout: the clock moves, no timer runs.
    vi.setSystemTime(Date.now() + 2 * STALL_MS);
    vi.advanceTimersByTime(EVERY_MS);
    expect(socket.destroy).not.toHaveBeenCalled();
    // Once running again, the client has its full stall timeout to move.
    socket.writableLength -= 10;
    vi.advanceTimersByTime(EVERY_MS);
    expect(socket.destroy).not.toHaveBeenCalled();
  });
});
