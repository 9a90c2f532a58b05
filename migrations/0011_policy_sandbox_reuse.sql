-- A workspace may turn sandbox reuse off (src/pool/sandbox-reuse.ts): null narrows nothing.
ALTER TABLE workspace_policies ADD COLUMN sandbox_reuse boolean NULL;
