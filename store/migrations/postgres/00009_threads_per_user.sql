-- Thread ids are per user: a thread is (user_id, id), so one user's thread
-- id never collides with, nor reveals, another user's. The threads table's
-- key becomes (user_id, id); the tables that name a thread (mcp_tasks,
-- thread_events, mcp_sessions) reference it by (user_id, thread_id), and
-- thread_events gets the user_id it lacked, taken from its thread (ids were
-- unique across users until now, so every row finds exactly one).

-- +goose Up
ALTER TABLE mcp_tasks DROP CONSTRAINT mcp_tasks_thread_id_fkey;
ALTER TABLE thread_events DROP CONSTRAINT thread_events_thread_id_fkey;
ALTER TABLE mcp_sessions DROP CONSTRAINT mcp_sessions_thread_id_fkey;
ALTER TABLE threads DROP CONSTRAINT threads_pkey;
ALTER TABLE threads ADD CONSTRAINT threads_pkey PRIMARY KEY (user_id, id);

ALTER TABLE thread_events ADD COLUMN user_id VARCHAR(64);
UPDATE thread_events e SET user_id = t.user_id FROM threads t WHERE t.id = e.thread_id;
ALTER TABLE thread_events ALTER COLUMN user_id SET NOT NULL;
DROP INDEX ix_thread_events_thread_seq;
CREATE INDEX ix_thread_events_thread_seq ON thread_events (user_id, thread_id, seq);

ALTER TABLE mcp_tasks ADD CONSTRAINT mcp_tasks_thread_fkey
    FOREIGN KEY (user_id, thread_id) REFERENCES threads (user_id, id);
ALTER TABLE thread_events ADD CONSTRAINT thread_events_thread_fkey
    FOREIGN KEY (user_id, thread_id) REFERENCES threads (user_id, id);
ALTER TABLE mcp_sessions ADD CONSTRAINT mcp_sessions_thread_fkey
    FOREIGN KEY (user_id, thread_id) REFERENCES threads (user_id, id);

-- Workers of an earlier build append events without user_id (and lock
-- their thread by id alone): the event's task names its user. So a rolling
-- upgrade, or Worker Versioning's earlier build draining its tasks, keeps
-- delivering to the inbox. An insert that names its user costs nothing.
-- +goose StatementBegin
CREATE FUNCTION thread_events_user_from_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NULL THEN
        SELECT user_id INTO NEW.user_id FROM mcp_tasks WHERE id = NEW.task_id;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER thread_events_user_from_task BEFORE INSERT ON thread_events
    FOR EACH ROW EXECUTE FUNCTION thread_events_user_from_task();

-- +goose Down
DROP TRIGGER thread_events_user_from_task ON thread_events;
DROP FUNCTION thread_events_user_from_task();
-- Only while no thread id is used by two users.
ALTER TABLE mcp_tasks DROP CONSTRAINT mcp_tasks_thread_fkey;
ALTER TABLE thread_events DROP CONSTRAINT thread_events_thread_fkey;
ALTER TABLE mcp_sessions DROP CONSTRAINT mcp_sessions_thread_fkey;
DROP INDEX ix_thread_events_thread_seq;
CREATE INDEX ix_thread_events_thread_seq ON thread_events (thread_id, seq);
ALTER TABLE thread_events DROP COLUMN user_id;
ALTER TABLE threads DROP CONSTRAINT threads_pkey;
ALTER TABLE threads ADD CONSTRAINT threads_pkey PRIMARY KEY (id);
ALTER TABLE mcp_tasks ADD CONSTRAINT mcp_tasks_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads (id);
ALTER TABLE thread_events ADD CONSTRAINT thread_events_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads (id);
ALTER TABLE mcp_sessions ADD CONSTRAINT mcp_sessions_thread_id_fkey FOREIGN KEY (thread_id) REFERENCES threads (id);
