-- A workspace's hibernation settings (src/hibernate/): null sets nothing (never hibernates
-- on idle; no bound on its checkpoints).
ALTER TABLE workspace_policies ADD COLUMN hibernate_after_idle_s integer NULL;
ALTER TABLE workspace_policies ADD COLUMN max_hibernated_sessions integer NULL;
