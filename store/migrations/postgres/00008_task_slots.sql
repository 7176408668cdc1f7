-- Running-task slots (mcp_tasks.max_running_tasks_per_user): a submit
-- reserves one, keyed by its task id, before anything is submitted; the
-- insert of the task's row deletes it in the same transaction, a failed
-- submit deletes it, and one left behind by a replica that died lapses at
-- expires_at. A user's tasks that have not ended plus their live slots are
-- what the cap counts.

-- +goose Up
CREATE TABLE mcp_task_slots (
    task_id    VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id    VARCHAR(64) NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX ix_mcp_task_slots_user_expires ON mcp_task_slots (user_id, expires_at);

-- +goose Down
DROP TABLE mcp_task_slots;
