-- question_seq numbers a task's questions: it grows by one whenever the task
-- enters input_required or its question changes, and never otherwise, so an
-- answer names the question it answers (a late answer to an earlier question
-- is refused). row_version grows by one with every write of the row: a
-- writer that read the row may write it only if nobody wrote it since (the
-- poll activity's writes, so that a late write cannot overwrite a cancel).

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN question_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mcp_tasks ADD COLUMN row_version INTEGER NOT NULL DEFAULT 1;
UPDATE mcp_tasks SET question_seq = 1 WHERE status = 'input_required';

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN row_version;
ALTER TABLE mcp_tasks DROP COLUMN question_seq;
