import { defineConfig } from "vitest/config";

// Four suites by kind (docs/architecture.md, "Tests"). Integration and e2e suites talk to real
// services and spawn real processes, so they get longer timeouts and run files one at a time
// where they share a machine-wide resource (ports, the Docker engine).
export default defineConfig({
  test: {
    // Under CI a JSON report too, from which .ci/run prints its closing "N passed" line.
    reporters: process.env.CI === "true" ? ["default", "json"] : ["default"],
    outputFile: { json: "test-results.json" },
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // Several Docker engines in network namespaces on this machine (test/support/test-hosts.ts):
        // needs root; one file at a time, since every file starts the machine's test hosts.
        test: {
          name: "multihost",
          include: ["test/multihost/**/*.test.ts"],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          fileParallelism: false,
          maxWorkers: 1,
        },
      },
    ],
  },
});
