import { describe, expect, it } from "vitest";
import { routeById } from "../../../src/pipeline/steps/route.js";

describe("pipeline step route", () => {
  it("finds a registered operation by id", () => {
    expect(routeById("sessions.exec")).toMatchObject({ method: "POST", path: "/sessions/{id}/exec" });
  });

  it("answers 404 for an id no operation has", () => {
    expect(() => routeById("sessions.teleport")).toThrow(
      expect.objectContaining({ code: "request.not_found" }),
    );
  });
});
