/** The persistent interpreter's state: what one session's code set must not be there in the next. */
import type { LeakProbe } from "../probe.js";
import { py } from "../probe.js";

export const interpreterLeakProbes: LeakProbe[] = [
  {
    kind: "leak",
    name: "interpreter.variables",
    claim:
      "a session's interpreter variables and patched built-ins are not in the next session's interpreter",
    plant: {
      stage: "early",
      code: (tag) => `
import builtins
globals()[${py(tag)}] = 'planted'
setattr(builtins, ${py(tag)}, 'planted')
`,
    },
    look: {
      stage: "first",
      expression: (tag) =>
        `[w for w, hit in [('a global', ${py(tag)} in globals()), ('a built-in', hasattr(__import__('builtins'), ${py(tag)}))] if hit]`,
    },
  },
  {
    kind: "leak",
    name: "interpreter.modules",
    claim: "modules a session imported, planted or patched are not in the next session's interpreter",
    plant: {
      stage: "early",
      code: (tag) => `
import sys, types, json
sys.modules[${py(tag)}] = types.ModuleType(${py(tag)})
sys.path.append('/tmp/' + ${py(tag)})
json.${tag} = 'planted'
`,
    },
    look: {
      stage: "first",
      expression: (tag) =>
        `[w for w, hit in [('sys.modules', ${py(tag)} in __import__('sys').modules), ('sys.path', any(${py(tag)} in p for p in __import__('sys').path)), ('json patched', hasattr(__import__('json'), ${py(tag)}))] if hit]`,
    },
  },
  {
    kind: "leak",
    name: "interpreter.environment",
    claim: "environment variables a session set are not in the next session's interpreter or shell",
    plant: {
      stage: "early",
      code: (tag) => `
import os
os.environ['SPV_ENV_' + ${py(tag)}] = 'planted'
`,
    },
    look: {
      stage: "after-tools",
      expression: (tag) =>
        `[k for k in os.environ if ${py(tag)} in k] + ['the bash tool has ' + l for l in SHELL_ENV.splitlines() if ${py(tag)} in l]`,
    },
  },
];
