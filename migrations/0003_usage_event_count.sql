-- Calls and file transfers of one session are recorded as one row per flush window (about
-- a second) and kind, carrying how many happened: at one row per call, a busy session
-- would write a row per call, and the usage table would grow with every print().
ALTER TABLE usage_events ADD COLUMN events integer NOT NULL DEFAULT 1 CHECK (events >= 1);
