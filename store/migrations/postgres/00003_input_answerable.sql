-- Whether a task's question (input_required) can be answered through
-- mcpflow (POST /api/threads/{t}/mcp-tasks/{id}/input).

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN input_answerable BOOLEAN NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN input_answerable;
