import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlainCodeOrCommand, parseExecRequest } from "../../../src/contract/parse-exec-request.js";
import { execRequest } from "../../../src/contract/schemas.js";

/** Values a field of an Execute body may take, valid and not. */
const fieldValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.string(),
  fc.constant(""),
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, 1, -1, 1.5, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Infinity),
  fc.boolean(),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);

const inputValue = fc.oneof(
  fieldValue,
  fc.record({ code: fieldValue, command: fieldValue }, { requiredKeys: [] }),
  fc.record({ code: fc.string({ minLength: 1 }) }),
  fc.record({ command: fc.string({ minLength: 1 }), extra: fieldValue }),
  fc.record({ command: fc.constantFrom("view", "create"), path: fieldValue }),
);

const execBody = fc.oneof(
  fieldValue,
  fc.record(
    {
      tool: fc.oneof(
        fc.constantFrom("code_execution", "bash_code_execution", "text_editor_code_execution"),
        fieldValue,
      ),
      input: inputValue,
      timeout_seconds: fieldValue,
      tool_use_id: fieldValue,
      other: fieldValue,
    },
    { requiredKeys: [] },
  ),
);

describe("the Execute body's fast path", () => {
  it("accepts only what the contract's schema accepts", () => {
    fc.assert(
      fc.property(execBody, (body) => {
        if (isPlainCodeOrCommand(body)) expect(execRequest.safeParse(body).success).toBe(true);
      }),
      { numRuns: 20_000 },
    );
  });

  it("takes the common bodies, leaving the text editor's and unusual ones to the schema", () => {
    expect(isPlainCodeOrCommand({ tool: "code_execution", input: { code: "print(1)" } })).toBe(true);
    expect(
      isPlainCodeOrCommand({
        tool: "bash_code_execution",
        input: { command: "ls" },
        timeout_seconds: 30,
        tool_use_id: "toolu_1",
        extra: { kept: true },
      }),
    ).toBe(true);
    expect(isPlainCodeOrCommand({ tool: "code_execution", input: { code: "" } })).toBe(false);
    expect(isPlainCodeOrCommand({ tool: "code_execution", input: { code: "1" }, timeout_seconds: 0 })).toBe(
      false,
    );
    expect(isPlainCodeOrCommand({ tool: "code_execution", input: { code: "1" }, timeout_seconds: 1.5 })).toBe(
      false,
    );
    expect(isPlainCodeOrCommand({ tool: "code_execution", input: { code: "1" }, tool_use_id: 7 })).toBe(
      false,
    );
    expect(
      isPlainCodeOrCommand({ tool: "text_editor_code_execution", input: { command: "view", path: "a" } }),
    ).toBe(false);
    expect(isPlainCodeOrCommand([{ tool: "code_execution", input: { code: "1" } }])).toBe(false);
  });

  it("returns the body itself, unknown fields and all", () => {
    const body = { tool: "code_execution", input: { code: "print(1)", extra: 1 }, note: "kept" };
    expect(parseExecRequest(body)).toBe(body);
  });

  it("still refuses what the schema refuses, with the contract's codes", () => {
    expect(() => parseExecRequest({ tool: "nope", input: {} })).toThrow(
      expect.objectContaining({ code: "tool.unknown" }),
    );
    expect(() => parseExecRequest({ tool: "code_execution", input: { code: "" } })).toThrow(
      expect.objectContaining({ code: "request.malformed" }),
    );
  });
});

describe("an unknown tool kind", () => {
  const messageOf = (body: unknown): string => {
    try {
      parseExecRequest(body);
    } catch (error) {
      expect(error).toMatchObject({ code: "tool.unknown", status: 400 });
      return (error as Error).message;
    }
    throw new Error("accepted");
  };
  const valid = "code_execution, bash_code_execution, text_editor_code_execution";

  it("is answered with every valid tool, and the one most likely meant", () => {
    expect(messageOf({ tool: "bash", input: { command: "ls" } })).toBe(
      `unknown tool kind: "bash" (did you mean "bash_code_execution"?); the tools are ${valid}`,
    );
    expect(messageOf({ tool: "text_editor", input: {} })).toContain(
      'did you mean "text_editor_code_execution"?',
    );
    expect(messageOf({ tool: "code_exection", input: {} })).toContain('did you mean "code_execution"?');
    expect(messageOf({ tool: "python", input: {} })).toContain('did you mean "code_execution"?');
    expect(messageOf({ tool: "str_replace_based_edit_tool", input: {} })).toContain(
      'did you mean "text_editor_code_execution"?',
    );
  });

  it("names the tools without a guess when nothing is close, or when the body names none", () => {
    expect(messageOf({ tool: "teleport", input: {} })).toBe(
      `unknown tool kind: "teleport"; the tools are ${valid}`,
    );
    expect(messageOf({ tool: 7, input: {} })).toBe(`unknown tool kind: 7; the tools are ${valid}`);
    expect(messageOf({ input: { code: "1" } })).toBe(`the body names no tool: the tools are ${valid}`);
  });
});
