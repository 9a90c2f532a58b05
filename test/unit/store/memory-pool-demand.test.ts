import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import { describePoolDemandExchange } from "../../shared/pool-demand-store-suite.js";

// One process, one store: "two replicas" of dev mode are the same store twice.
describePoolDemandExchange("memory", async () => {
  const store = new MemoryCoordinationStore();
  return [store, store];
});
