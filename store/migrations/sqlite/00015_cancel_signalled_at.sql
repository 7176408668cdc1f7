-- When the API sent a task's workflow its cancel signal. The workflow
-- records the request itself (cancel_requested_at) once a poll in flight
-- has returned; until then this column lets the task read as
-- cancel-requested. Only the API writes it (one column, nothing else of
-- the row), and a whole-row write leaves it, so a poll in flight does not
-- take it for the workflow's cancel.

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN cancel_signalled_at DATETIME NULL;

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN cancel_signalled_at;
