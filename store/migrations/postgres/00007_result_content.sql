-- A completed native task's tool result as the upstream gave it: its content
-- blocks (a JSON array, kept as text byte for byte, so TEXT and not JSONB)
-- and whether the task's result is the upstream's structuredContent (true)
-- or, when it had none, those same blocks (false). The MCP endpoint answers
-- them; rows without content render the result as before.

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN content TEXT;
ALTER TABLE mcp_tasks ADD COLUMN result_structured BOOLEAN NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN result_structured;
ALTER TABLE mcp_tasks DROP COLUMN content;
