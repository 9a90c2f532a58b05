import { describe, expect, it } from "vitest";
import { attachmentDisposition, fileNameOf } from "../../../src/contract/content-disposition.js";
import { errorCodeLabel, SandpoolError } from "../../../src/contract/error-codes.js";
import { declaresBody } from "../../../src/http/common/body-read-timeout.js";
import { CallsInFlight } from "../../../src/http/middleware/calls-in-flight.js";
import { UnauthenticatedGate } from "../../../src/http/middleware/unauthenticated-gate.js";

function refusal(action: () => unknown): SandpoolError {
  try {
    action();
  } catch (error) {
    if (error instanceof SandpoolError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("UnauthenticatedGate", () => {
  it("refuses past its bound with request.busy and admits again once one is released", () => {
    const gate = new UnauthenticatedGate(2);
    const first = gate.enter();
    gate.enter();
    const error = refusal(() => gate.enter());
    expect(error.code).toBe("request.busy");
    expect(error.status).toBe(503);
    expect(error.retryAfterSeconds).toBe(1);
    first();
    first(); // a second release changes nothing
    expect(gate.inFlight).toBe(1);
    gate.enter();
    expect(() => gate.enter()).toThrow(SandpoolError);
  });
});

describe("CallsInFlight", () => {
  it("bounds each workspace on its own and forgets idle ones", () => {
    const calls = new CallsInFlight(2);
    const a1 = calls.enter("a");
    const a2 = calls.enter("a");
    const error = refusal(() => calls.enter("a"));
    expect(error.code).toBe("quota.calls_in_flight");
    expect(error.status).toBe(429);
    expect(error.retryAfterSeconds).toBe(1);
    const b = calls.enter("b"); // another workspace is not affected
    a1();
    a1();
    expect(calls.count("a")).toBe(1);
    calls.enter("a");
    a2();
    b();
    expect(calls.count("b")).toBe(0);
  });
});

describe("errorCodeLabel", () => {
  it("keeps known codes and folds anything else into one value", () => {
    expect(errorCodeLabel("file.not_found")).toBe("file.not_found");
    expect(errorCodeLabel("quota.calls_in_flight")).toBe("quota.calls_in_flight");
    for (const forged of ["sandbox.pwned", "toString", "__proto__", "", 42, null, { a: 1 }]) {
      expect(errorCodeLabel(forged)).toBe("sandbox.other");
    }
  });
});

describe("attachment disposition", () => {
  it("names the file by the last segment of its path", () => {
    expect(fileNameOf("a/b/report.html")).toBe("report.html");
    expect(fileNameOf("/x/y/")).toBe("y");
    expect(fileNameOf(undefined)).toBe("download");
    expect(fileNameOf("a/..")).toBe("download");
  });

  it("quotes an ASCII fallback safely and carries the exact name in UTF-8", () => {
    expect(attachmentDisposition("plot.svg")).toBe(
      `attachment; filename="plot.svg"; filename*=UTF-8''plot.svg`,
    );
    expect(attachmentDisposition('a"b\\c;d.txt')).toBe(
      `attachment; filename="a_b_c;d.txt"; filename*=UTF-8''a%22b%5Cc%3Bd.txt`,
    );
    expect(attachmentDisposition("résumé 1.pdf")).toBe(
      `attachment; filename="r_sum_ 1.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%201.pdf`,
    );
    expect(attachmentDisposition("a\r\nSet-Cookie: x")).toBe(
      `attachment; filename="a__Set-Cookie: x"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x`,
    );
    expect(attachmentDisposition("\ud800.txt")).toContain("filename*=UTF-8''%EF%BF%BD.txt");
  });
});

describe("declaresBody", () => {
  it("is true for chunked bodies and a positive Content-Length only", () => {
    expect(declaresBody({ "transfer-encoding": "chunked" })).toBe(true);
    expect(declaresBody({ "content-length": "5" })).toBe(true);
    expect(declaresBody({ "content-length": "0" })).toBe(false);
    expect(declaresBody({})).toBe(false);
  });
});
