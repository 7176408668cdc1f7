-- The server's latest progress message of a task (Snapshot.Message).

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN status_message TEXT;

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN status_message;
