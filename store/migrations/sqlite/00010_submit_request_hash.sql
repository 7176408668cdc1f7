-- Submits with an idempotency key: the task id derives from (user,
-- thread, key), and request_hash identifies what the submit asked for
-- (server, tool, arguments), so that a retry with the same key answers the
-- same task and one asking for something else is refused. The slot holds
-- it while the submit runs; the insert of the task's row copies it to the
-- row. '' for a submit without a key.

-- +goose Up
ALTER TABLE mcp_task_slots ADD COLUMN request_hash VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE mcp_tasks ADD COLUMN request_hash VARCHAR(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN request_hash;
ALTER TABLE mcp_task_slots DROP COLUMN request_hash;
