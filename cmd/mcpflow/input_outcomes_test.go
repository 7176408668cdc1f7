package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The outcomes of an answer that is not delivered, each its own, on every
// path an answer takes (POST …/input, 2026-07-28 tasks/update, a
// 2025-11-25 client's elicitation response), against the demo server's
// answer_job (a toolset's input_tool) told to refuse, hold or not cancel.

// postAnswer posts a task's answer to the REST input route and returns
// the response's status, Retry-After and JSON body.
func (e *taskEnv) postAnswer(t *testing.T, thread, id, body string) (int, string, map[string]any) {
	t.Helper()
	code, retryAfter, out, err := e.tryAnswer(thread, id, body)
	require.NoError(t, err)
	return code, retryAfter, out
}

// tryAnswer is postAnswer for another goroutine than the test's: it
// returns its error.
func (e *taskEnv) tryAnswer(thread, id, body string) (int, string, map[string]any, error) {
	req, err := http.NewRequest("POST", e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id+"/input", strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, "", nil, fmt.Errorf("%w: %s", err, b)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), out, nil
}

// send is call without the checks: the whole JSON-RPC answer.
func (c *rpc2026) send(t *testing.T, method, name string, params map[string]any) map[string]any {
	t.Helper()
	out, err := c.trySend(method, name, params)
	require.NoError(t, err)
	return out
}

// trySend is send for another goroutine than the test's: it returns its
// error (an HTTP status other than 200 too).
func (c *rpc2026) trySend(method, name string, params map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	params["_meta"] = c.meta()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %v", resp.StatusCode, out)
	}
	return out, nil
}

// questionKey waits until the task asks (tasks/get) and returns the
// inputRequests key of its one question.
func (c *rpc2026) questionKey(t *testing.T, id string) string {
	t.Helper()
	asking := c.waitTask(t, id, "input_required")
	reqs, _ := asking["inputRequests"].(map[string]any)
	require.Len(t, reqs, 1, "%v", asking)
	for k := range reqs {
		return k
	}
	return ""
}

// update sends tasks/update with one answer and returns the whole answer.
func (c *rpc2026) update(t *testing.T, id, key string, answer map[string]any) map[string]any {
	t.Helper()
	return c.send(t, "tasks/update", id, updateParams(id, key, answer))
}

func updateParams(id, key string, answer map[string]any) map[string]any {
	return map[string]any{"taskId": id, "inputResponses": map[string]any{key: answer}}
}

// submitExt starts the demo's job as a 2026-07-28 extension task.
func (c *rpc2026) submitExt(t *testing.T, args map[string]any) string {
	t.Helper()
	created := c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job", "arguments": args})
	require.Equal(t, "task", created["resultType"], "%v", created)
	return created["taskId"].(string)
}

// TestAnswerRefusedUpstream: the MCP server refuses the answer on every
// attempt of its delivery (answer_job answers isError). The client sees
// it, the question stays open (the same question, still answerable), and
// the next answer is delivered: REST answers 502 upstream_error,
// tasks/update a JSON-RPC error, and a 2025-11-25 client (the TypeScript
// SDK v1) a failed POST of its elicitation response; its next tasks/result
// asks the question again.
func TestAnswerRefusedUpstream(t *testing.T) {
	e := startInputEnv(t)
	const refused = "the MCP server did not take the answer: "
	const stillOpen = "; the question is still open: answer it again"
	job := `{"duration_seconds": 0.5, "outcome": "ask", "answer_errors": 3}`

	t.Run("REST", func(t *testing.T) {
		id := e.submit(t, "r1", "demo_submit_job", job)
		before := e.waitQuestion(t, "r1", id)
		code, _, out := e.postAnswer(t, "r1", id, `{"action": "accept", "content": {"format": "pdf"}}`)
		require.Equal(t, 502, code, "%v", out)
		msg := out["error"].(map[string]any)["message"].(string)
		require.Equal(t, "upstream_error", out["error"].(map[string]any)["code"])
		require.True(t, strings.HasPrefix(msg, refused), msg)
		require.Contains(t, msg, "the job cannot take an answer right now", "the server's words")
		require.True(t, strings.HasSuffix(msg, stillOpen), msg)

		_, d := get(t, e.m.URL()+"/api/threads/r1/mcp-tasks/"+id, testUserToken)
		require.Equal(t, "input_required", d["status"], "%v", d)
		require.Equal(t, true, d["input_answerable"], "the question is still open: %v", d)
		require.Equal(t, before["question_id"], d["question_id"], "the same question")
		_, stats := e.demoJob(t, "r1", "plain", id)
		require.EqualValues(t, 3, stats["answer_calls"], "three attempts, none taken")

		code, _, out = e.postAnswer(t, "r1", id, `{"action": "accept", "content": {"format": "csv"}}`)
		require.Equal(t, 202, code, "%v", out)
		d = e.waitStatus(t, "r1", id, "completed")
		require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "csv"}}, d["result"])
	})

	t.Run("tasks/update", func(t *testing.T) {
		c := &rpc2026{url: e.m.URL() + "/mcp/threads/r2", token: testUserToken, ext: true}
		id := c.submitExt(t, map[string]any{"duration_seconds": 0.5, "outcome": "ask", "answer_errors": 3})
		key := c.questionKey(t, id)
		out := c.update(t, id, key, map[string]any{"action": "accept", "content": map[string]any{"format": "pdf"}})
		require.Nil(t, out["result"], "a refused answer is not acknowledged: %v", out)
		rpcErr := out["error"].(map[string]any)
		require.Equal(t, -32603.0, rpcErr["code"], "%v", out)
		require.True(t, strings.HasPrefix(rpcErr["message"].(string), refused), "%v", rpcErr)
		require.True(t, strings.HasSuffix(rpcErr["message"].(string), stillOpen), "%v", rpcErr)

		require.Equal(t, key, c.questionKey(t, id), "the same question is still open")
		ack := c.update(t, id, key, map[string]any{"action": "decline"})
		require.Nil(t, ack["error"], "%v", ack)
		done := c.waitTask(t, id, "completed")
		require.Equal(t, map[string]any{"action": "decline"}, done["result"].(map[string]any)["structuredContent"])
	})

	t.Run("2025 elicitation response", func(t *testing.T) {
		out := runTS[struct {
			TaskID       string `json:"taskId"`
			Elicitations []struct {
				Message string `json:"message"`
			} `json:"elicitations"`
			ErrorsBefore     []string                `json:"errorsBefore"`
			ClientErrors     []string                `json:"clientErrors"`
			ClientErrorCodes []any                   `json:"clientErrorCodes"`
			Result           tsAttempt[tsToolResult] `json:"result"`
			FirstResult      tsAttempt[tsToolResult] `json:"firstResult"`
		}](t, "task_elicit_again", e.m.URL()+"/mcp/threads/r3", testUserToken, tsInput{
			Tool:      "demo_submit_job",
			Arguments: map[string]any{"duration_seconds": 0.5, "outcome": "ask", "answer_errors": 3},
			Answer:    map[string]any{"action": "accept", "content": map[string]any{"format": "pdf"}},
		})
		// The SDK reports the failed POST of its response twice: the
		// transport's StreamableHTTPError (its code the HTTP status), and
		// the protocol's "Failed to send response".
		require.NotEmpty(t, out.ErrorsBefore, "the failed answer is reported to the client: %+v", out)
		require.Contains(t, out.ClientErrorCodes, 502.0, "the HTTP status: %+v", out)
		require.Contains(t, strings.Join(out.ClientErrors, "\n"), "Failed to send response")
		for _, seen := range out.ClientErrors {
			require.Contains(t, seen, "Error POSTing to endpoint")
			require.Contains(t, seen, `"code":-32603,"message":"`+refused+"MCP task tool 'answer_job' returned an error: the job cannot take an answer right now"+stillOpen,
				"the JSON-RPC error's message, and only the first answer failed: %s", seen)
		}
		require.Len(t, out.Elicitations, 2, "the next tasks/result asked the question again: %+v", out)
		require.Equal(t, out.Elicitations[0], out.Elicitations[1])
		require.Nil(t, out.Result.Error, "%+v", out.Result.Error)
		require.Equal(t, map[string]any{"action": "accept", "answer": map[string]any{"format": "pdf"}}, out.Result.Result.StructuredContent)
		require.Nil(t, out.FirstResult.Error, "the first tasks/result got the result too: %+v", out.FirstResult.Error)
	})
}

// TestConcurrentAnswersToOneQuestion: two answers to one question while
// the first is on its way (answer_job holds it until released): exactly
// one is delivered; the other is refused as a retryable conflict
// (tasks/update: a JSON-RPC error -32003 with retryAfterMs; REST: 409 with
// Retry-After), never acknowledged while nothing was delivered. Sent again
// once the first was delivered, it meets a closed question: tasks/update
// acknowledges it (the extension ignores it), REST answers 409 with the
// task's detail.
func TestConcurrentAnswersToOneQuestion(t *testing.T) {
	e := startInputEnv(t)
	job := map[string]any{"duration_seconds": 0.5, "outcome": "ask", "hold_answers": true, "answer_duration_seconds": 300}

	// waitHeld waits until the demo job holds one answer_job call (the
	// first answer is on its way) and returns the job's id.
	waitHeld := func(t *testing.T, thread, id string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			remote, stats := e.demoJob(t, thread, "plain", id)
			if stats["answers_held"] == 1.0 {
				return remote
			}
			require.True(t, time.Now().Before(deadline), "the first answer never reached the server: %v", stats)
			time.Sleep(50 * time.Millisecond)
		}
	}
	release := func(t *testing.T, thread, remote string) {
		t.Helper()
		code, out := e.post(t, "/api/threads/"+thread+"/tools/plain_release_answers/call", fmt.Sprintf(`{"arguments": {"task_id": %q}}`, remote))
		require.Equal(t, 200, code, "%v", out)
		require.Equal(t, map[string]any{"task_id": remote, "released": 1.0}, out["structured_content"])
	}

	t.Run("tasks/update", func(t *testing.T) {
		c := &rpc2026{url: e.m.URL() + "/mcp/threads/c1", token: testUserToken, ext: true}
		id := c.submitExt(t, job)
		key := c.questionKey(t, id)
		type answer struct {
			out map[string]any
			err error
		}
		first := make(chan answer, 1)
		go func() {
			out, err := c.trySend("tasks/update", id, updateParams(id, key, map[string]any{"action": "accept", "content": map[string]any{"format": "pdf"}}))
			first <- answer{out, err}
		}()
		remote := waitHeld(t, "c1", id)

		second := c.update(t, id, key, map[string]any{"action": "accept", "content": map[string]any{"format": "csv"}})
		require.Nil(t, second["result"], "an answer refused while another is on its way is not acknowledged: %v", second)
		rpcErr := second["error"].(map[string]any)
		require.Equal(t, -32003.0, rpcErr["code"], "%v", second)
		require.Contains(t, rpcErr["message"], "an answer to this question is already being delivered: send yours again shortly")
		require.Equal(t, map[string]any{"retryAfterMs": 1000.0}, rpcErr["data"])

		release(t, "c1", remote)
		ack := <-first
		require.NoError(t, ack.err)
		require.Nil(t, ack.out["error"], "the first answer was delivered: %v", ack.out)
		again := c.update(t, id, key, map[string]any{"action": "accept", "content": map[string]any{"format": "csv"}})
		require.Nil(t, again["error"], "sent again, it meets a closed question, which is ignored: %v", again)
		_, stats := e.demoJob(t, "c1", "plain", id)
		require.EqualValues(t, 1, stats["answer_calls"], "exactly one answer reached the server")
		_, d := get(t, e.m.URL()+"/api/threads/c1/mcp-tasks/"+id, testUserToken)
		require.NotEqual(t, "input_required", d["status"], "the question was answered: %v", d)
	})

	t.Run("REST", func(t *testing.T) {
		args, _ := json.Marshal(job)
		id := e.submit(t, "c2", "demo_submit_job", string(args))
		e.waitQuestion(t, "c2", id)
		type answer struct {
			code int
			out  map[string]any
			err  error
		}
		first := make(chan answer, 1)
		go func() {
			code, _, out, err := e.tryAnswer("c2", id, `{"action": "accept", "content": {"format": "pdf"}}`)
			first <- answer{code, out, err}
		}()
		remote := waitHeld(t, "c2", id)

		code, retryAfter, out := e.postAnswer(t, "c2", id, `{"action": "decline"}`)
		require.Equal(t, 409, code, "%v", out)
		require.Equal(t, "1", retryAfter)
		require.Equal(t, "conflict", out["error"].(map[string]any)["code"], "%v", out)
		require.Contains(t, out["error"].(map[string]any)["message"], "an answer to this question is already being delivered")

		release(t, "c2", remote)
		a := <-first
		require.NoError(t, a.err)
		require.Equal(t, 202, a.code, "%v", a.out)
		code, retryAfter, out = e.postAnswer(t, "c2", id, `{"action": "decline"}`)
		require.Equal(t, 409, code, "%v", out)
		require.Empty(t, retryAfter)
		require.Equal(t, id, out["task_id"], "the question is closed: the task's detail: %v", out)
		_, stats := e.demoJob(t, "c2", "plain", id)
		require.EqualValues(t, 1, stats["answer_calls"], "exactly one answer reached the server")
	})
}

// TestAnswerWhileCancelling: a task whose cancel is in progress (the
// server does not confirm it: cancel_job fails) still shows its question,
// not answerable (input_answerable false), and an answer is refused saying
// the task is being cancelled: REST 409 with that message, tasks/update a
// JSON-RPC error. Nothing reaches the server.
func TestAnswerWhileCancelling(t *testing.T) {
	e := startInputEnv(t)
	id := e.submit(t, "x1", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "ask", "cancel_errors": 1000}`)
	e.waitQuestion(t, "x1", id)
	c := &rpc2026{url: e.m.URL() + "/mcp/threads/x1", token: testUserToken, ext: true}
	key := c.questionKey(t, id) // (its inputRequests go once the cancel is requested)
	code, out := e.post(t, "/api/threads/x1/mcp-tasks/"+id+"/cancel", `{}`)
	require.Equal(t, 202, code, "%v", out)
	d := e.waitDetail(t, "x1", id, "cancel_requested", true)
	require.Equal(t, "input_required", d["status"], "%v", d)
	require.Equal(t, false, d["input_answerable"], "%v", d)
	require.NotNil(t, d["input_required"], "the question is still shown: %v", d)

	code, _, out = e.postAnswer(t, "x1", id, `{"action": "decline"}`)
	require.Equal(t, 409, code, "%v", out)
	require.Equal(t, map[string]any{"code": "conflict", "message": "the task is being cancelled: it takes no answer"}, out["error"])

	res := c.update(t, id, key, map[string]any{"action": "decline"})
	require.Equal(t, map[string]any{"code": -32602.0, "message": "the task is being cancelled: it takes no answer"}, res["error"], "%v", res)

	_, stats := e.demoJob(t, "x1", "plain", id)
	require.EqualValues(t, 0, stats["answer_calls"], "nothing reached the server")
}
