-- A workspace's egress allow-lists (src/egress): CIDR ranges it may reach although the
-- defaults deny them, and the host names it is limited to. Null means "no narrowing: the
-- deployment's lists apply", like every column of workspace_policies.
ALTER TABLE workspace_policies ADD COLUMN egress_allow_cidrs text[] NULL;
ALTER TABLE workspace_policies ADD COLUMN egress_allow_hosts text[] NULL;
