package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestAnswerNamesItsQuestion: the detail numbers the current question, and
// an answer for another question is refused with 409 naming the current
// one; it never reaches the workflow. Rewriting the row without a new
// question (a progress message) keeps the number.
func TestAnswerNamesItsQuestion(t *testing.T) {
	t.Parallel()
	rec := &answerRecorder{}
	b := setupInput(t, rec)
	b.thread(t, "th", "alice")
	asking := b.task(t, "alice", "th", 1, mcpflow.StatusInputRequired, func(tk *mcpflow.Task) {
		tk.InputRequired, tk.InputAnswerable = map[string]any{"message": "Which year?"}, true
	})
	path := "/api/threads/th/mcp-tasks/" + asking.ID
	questionID := func() any {
		t.Helper()
		code, d := b.do(t, "GET", path, aliceToken, "")
		require.Equal(t, 200, code)
		return d["question_id"]
	}
	require.EqualValues(t, 1, questionID())

	write := func(edit func(*mcpflow.Task)) {
		t.Helper()
		cur, err := b.db.GetTask(context.Background(), asking.ID)
		require.NoError(t, err)
		edit(cur)
		require.NoError(t, b.db.UpdateTask(context.Background(), cur))
	}
	msg := "thinking about it"
	write(func(tk *mcpflow.Task) { tk.StatusMessage = &msg })
	require.EqualValues(t, 1, questionID(), "a progress message is not a new question")

	// The task moves on to question 2 while a host still shows question 1.
	write(func(tk *mcpflow.Task) { tk.InputRequired = map[string]any{"message": "Which month?"} })
	require.EqualValues(t, 2, questionID())

	code, out := b.do(t, "POST", path+"/input", aliceToken, `{"action": "accept", "content": {}, "question_id": 1}`)
	require.Equal(t, 409, code, out)
	e := out["error"].(map[string]any)
	require.Equal(t, "conflict", e["code"])
	require.Equal(t, `this answer is for question 1, but the task's current question is question 2 ("Which month?"): read the task and answer that one`, e["message"])
	require.Empty(t, rec.answers, "a stale answer reached the workflow")

	code, out = b.do(t, "POST", path+"/input", aliceToken, `{"action": "accept", "content": {}, "question_id": 2}`)
	require.Equal(t, 202, code, out)
	require.Equal(t, []mcpflow.InputAnswer{{Action: "accept", Content: map[string]any{}, QuestionID: 2}}, rec.answers)

	// Once the task works again, no question is open: an answer naming
	// one is refused, and the detail names none.
	write(func(tk *mcpflow.Task) {
		tk.Status, tk.InputRequired, tk.InputAnswerable = mcpflow.StatusWorking, nil, false
	})
	require.Nil(t, questionID())
	code, out = b.do(t, "POST", path+"/input", aliceToken, `{"action": "decline", "question_id": 2}`)
	require.Equal(t, 409, code, out)
	require.Contains(t, out["error"].(map[string]any)["message"], "question 2, which is no longer open")

	code, _ = b.do(t, "POST", path+"/input", aliceToken, `{"action": "decline", "question_id": -1}`)
	require.Equal(t, 400, code)
}
