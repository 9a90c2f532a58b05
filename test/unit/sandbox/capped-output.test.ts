import { describe, expect, it } from "vitest";
import { CappedOutput, MarkedStreamReader } from "../../../src/sandbox/tools/capped-output.js";

const b = (text: string) => Buffer.from(text, "utf8");

describe("CappedOutput", () => {
  it("keeps everything under the cap, in order, unmarked", () => {
    const out = new CappedOutput(100);
    out.push(b("hello "));
    out.push(b("world\n"));
    expect(out.truncated).toBe(false);
    expect(out.text()).toBe("hello world\n");
  });

  it("is empty before any push", () => {
    const out = new CappedOutput(10);
    expect(out.text()).toBe("");
    expect(out.truncated).toBe(false);
  });

  it("keeps exactly the cap without marking it truncated", () => {
    const out = new CappedOutput(5);
    out.push(b("abc"));
    out.push(b("de"));
    expect(out.truncated).toBe(false);
    expect(out.text()).toBe("abcde");
  });

  it("keeps the first cap bytes of a chunk that crosses the cap and counts the rest", () => {
    const out = new CappedOutput(5);
    out.push(b("abc"));
    out.push(b("defgh"));
    expect(out.truncated).toBe(true);
    expect(out.text()).toBe("abcde\n[output truncated: 3 more bytes were not kept]\n");
  });

  it("counts, without keeping, every byte pushed after the cap", () => {
    const out = new CappedOutput(4);
    out.push(b("abcd"));
    for (let i = 0; i < 1000; i++) out.push(Buffer.alloc(1000, 0x78));
    expect(out.text()).toBe("abcd\n[output truncated: 1000000 more bytes were not kept]\n");
    expect((out as unknown as { chunks: Buffer[] }).chunks.length).toBe(1);
  });

  it("ignores empty chunks", () => {
    const out = new CappedOutput(3);
    out.push(Buffer.alloc(0));
    out.push(b("abc"));
    out.push(Buffer.alloc(0));
    expect(out.truncated).toBe(false);
    expect(out.text()).toBe("abc");
  });

  it("decodes multi-byte characters split across chunks", () => {
    const euro = b("€"); // 3 bytes
    const out = new CappedOutput(100);
    out.push(euro.subarray(0, 1));
    out.push(euro.subarray(1));
    expect(out.text()).toBe("€");
  });
});

describe("MarkedStreamReader", () => {
  const MARK = "<<END-1234>>";

  it("ignores output written between calls", () => {
    const reader = new MarkedStreamReader();
    reader.write(b("stray"));
    const out = new CappedOutput(100);
    void reader.begin(out, MARK);
    reader.write(b(`mine${MARK}`));
    expect(out.text()).toBe("mine");
  });

  it("resolves at the marker and captures what came before it", async () => {
    const reader = new MarkedStreamReader();
    const out = new CappedOutput(100);
    const done = reader.begin(out, MARK);
    reader.write(b("line 1\n"));
    reader.write(b(`line 2\n${MARK}`));
    await done;
    expect(out.text()).toBe("line 1\nline 2\n");
  });

  it("drops what follows the marker in the same chunk and stops capturing", async () => {
    const reader = new MarkedStreamReader();
    const out = new CappedOutput(100);
    const done = reader.begin(out, MARK);
    reader.write(b(`a${MARK}after`));
    await done;
    reader.write(b("later"));
    expect(out.text()).toBe("a");
  });

  it("finds a marker split across chunks at every position", async () => {
    const payload = `out\n${MARK}`;
    for (let cut = 1; cut < payload.length; cut++) {
      const reader = new MarkedStreamReader();
      const out = new CappedOutput(100);
      let resolved = false;
      const done = reader.begin(out, MARK).then(() => {
        resolved = true;
      });
      reader.write(b(payload.slice(0, cut)));
      await Promise.resolve();
      expect(resolved, `resolved early at cut ${cut}`).toBe(false);
      reader.write(b(payload.slice(cut)));
      await done;
      expect(out.text(), `cut ${cut}`).toBe("out\n");
    }
  });

  it("finds a marker arriving one byte per chunk", async () => {
    const reader = new MarkedStreamReader();
    const out = new CappedOutput(100);
    const done = reader.begin(out, MARK);
    for (const byte of b(`xyz${MARK}`)) reader.write(Buffer.from([byte]));
    await done;
    expect(out.text()).toBe("xyz");
  });

  it("keeps a partial marker that turns out not to be one", async () => {
    const reader = new MarkedStreamReader();
    const out = new CappedOutput(100);
    const done = reader.begin(out, MARK);
    reader.write(b("a<<END-12"));
    reader.write(b("xx and more "));
    reader.write(b(`tail${MARK}`));
    await done;
    expect(out.text()).toBe("a<<END-12xx and more tail");
  });

  it("abandon keeps the bytes held back as a possible marker prefix", () => {
    const reader = new MarkedStreamReader();
    const out = new CappedOutput(100);
    void reader.begin(out, MARK);
    reader.write(b("partial output <<END-"));
    reader.abandon();
    expect(out.text()).toBe("partial output <<END-");
    // After abandon nothing more is captured.
    reader.write(b("more"));
    expect(out.text()).toBe("partial output <<END-");
  });

  it("abandon before any write, or with no capture, is harmless", () => {
    const reader = new MarkedStreamReader();
    reader.abandon();
    const out = new CappedOutput(100);
    void reader.begin(out, MARK);
    reader.abandon();
    expect(out.text()).toBe("");
  });

  it("a new capture starts clean, with no bytes held from the last one", async () => {
    const reader = new MarkedStreamReader();
    const first = new CappedOutput(100);
    void reader.begin(first, MARK);
    reader.write(b("one <<E"));
    reader.abandon();
    const second = new CappedOutput(100);
    const done = reader.begin(second, "<<END-5678>>");
    reader.write(b("two<<END-5678>>"));
    await done;
    expect(first.text()).toBe("one <<E");
    expect(second.text()).toBe("two");
  });

  it("applies the capture's cap to what it passes on", async () => {
    const reader = new MarkedStreamReader();
    const out = new CappedOutput(4);
    const done = reader.begin(out, MARK);
    reader.write(b("0123456789"));
    reader.write(b(MARK));
    await done;
    expect(out.text()).toBe("0123\n[output truncated: 6 more bytes were not kept]\n");
  });
});

describe("output listener (streamed Execute)", () => {
  it("hears exactly the bytes kept, then the marker and notes once, so it adds up to text()", () => {
    const heard: string[] = [];
    const out = new CappedOutput(10, (chunk) => heard.push(chunk.toString()));
    out.push(b("0123"));
    out.push(b("456789abc"));
    out.push(b("more"));
    out.note("\nnote\n");
    const text = out.text();
    expect(heard).toEqual(["0123", "456789", "\n[output truncated: 7 more bytes were not kept]\n\nnote\n"]);
    expect(heard.join("")).toBe(text);
    out.text();
    expect(heard).toHaveLength(3);
  });

  it("passes output on at once when no marker could be starting", () => {
    const reader = new MarkedStreamReader();
    const heard: string[] = [];
    const out = new CappedOutput(100, (chunk) => heard.push(chunk.toString()));
    void reader.begin(out, "\u0000end\u0000");
    reader.write(b("first\n"));
    expect(heard).toEqual(["first\n"]);
    reader.write(b("second\u0000en"));
    expect(heard).toEqual(["first\n", "second"]);
  });
});
