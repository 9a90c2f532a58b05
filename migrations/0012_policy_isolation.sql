-- A workspace may require a stronger isolation than the deployment's (docs/isolation.md):
-- 'gvisor' leases only pools with isolation gvisor. Null narrows nothing.
ALTER TABLE workspace_policies ADD COLUMN isolation text NULL;
