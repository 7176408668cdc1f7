package mcpflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Actions of an answer to a task's question (the actions of an MCP
// elicitation result).
const (
	InputAccept  = "accept"
	InputDecline = "decline"
	InputCancel  = "cancel"
)

// InputAnswer is a user's answer to the question of a task that requires
// input: "accept" with the requested content, "decline" or "cancel".
type InputAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	// QuestionID names the question the answer is for (the task's
	// QuestionSeq when the user read it); 0 answers whatever question is
	// current. An answer for another question than the current one is
	// refused (StaleAnswer), never delivered to a newer question.
	QuestionID int `json:"question_id,omitempty"`
	// Responses are an MCP client's answers to a native task's input
	// requests (2026-07-28; Task.InputRequired[InputRequestsKey]), keyed as
	// the server keyed them and relayed as they are; when set, Action and
	// Content are unused. Answering some keys leaves the others open.
	Responses map[string]json.RawMessage `json:"responses,omitempty"`
}

// InputRequestsKey is the key of Task.InputRequired that holds a native
// task's input requests as its server sent them (2026-07-28 inputRequests:
// key → {"method", "params"}), next to the question mcpflow answers
// through its input route ("message", "requested_schema").
const InputRequestsKey = "input_requests"

// StaleAnswer returns the EConflict error of an answer for question id
// while t's current question is another (nil when id is 0 or current);
// its cause is ErrInputGone. The message names the current question by
// number and text.
func StaleAnswer(t *Task, id int) error {
	if id == 0 || (t.Status == StatusInputRequired && t.QuestionSeq == id) {
		return nil
	}
	if t.Status != StatusInputRequired {
		return &Error{Code: EConflict, Err: ErrInputGone,
			Message: fmt.Sprintf("this answer is for question %d, which is no longer open: the task does not require input now", id)}
	}
	text, _ := t.InputRequired["message"].(string)
	if text == "" {
		text, _ = t.InputRequired["question"].(string)
	}
	if text = TruncateChars(strings.TrimSpace(text), 200); text == "" {
		return &Error{Code: EConflict, Err: ErrInputGone,
			Message: fmt.Sprintf("this answer is for question %d, but the task's current question is question %d: read the task and answer that one", id, t.QuestionSeq)}
	}
	return &Error{Code: EConflict, Err: ErrInputGone,
		Message: fmt.Sprintf("this answer is for question %d, but the task's current question is question %d (%q): read the task and answer that one", id, t.QuestionSeq, text)}
}

// InputDriver is a Driver that can deliver an answer to the question of a
// remote task that requires input. A question it can answer is reported
// with Snapshot.InputAnswerable.
type InputDriver interface {
	// Answer delivers the answer upstream once. ErrInputGone says the
	// question is no longer waiting for an answer (it expired upstream, or
	// the process that held it is gone).
	Answer(ctx context.Context, ref TaskReference, answer InputAnswer) error
	// HoldsQuestion reports whether the task's current question is held in
	// this process's memory, so that its answer must be delivered by this
	// process.
	HoldsQuestion(ref TaskReference) bool
}

// ErrInputGone is InputDriver.Answer's error for a question that can no
// longer be answered. It is also the cause (Error.Err, EConflict) of an
// answer that names no open question: the task does not require input, or
// asks another question, or its question went away. Of the refusals of an
// answer it is the only one a caller may take as done (the Tasks
// extension ignores an answer to a question that is no longer open).
var ErrInputGone = errors.New("the task's question is no longer waiting for an answer")

// ErrAnswerPending is the cause (Error.Err, EConflict) of an answer
// refused because another answer to the same question is being delivered:
// a conflict that passes. Sent again once that delivery ended, the answer
// is delivered if it failed, and meets a closed question (ErrInputGone) if
// it succeeded.
var ErrAnswerPending = errors.New("another answer to the task's question is being delivered")

// ErrTaskCancelling is the cause (Error.Err, EConflict) of an answer
// refused because the task is being cancelled.
var ErrTaskCancelling = errors.New("the task is being cancelled")

// TaskCancellingMessage is the message of an answer refused because the
// task is being cancelled (the workflow's, and the task client's when the
// row says so already).
const TaskCancellingMessage = "the task is being cancelled: it takes no answer"

// An answer that reached the task's workflow but that the MCP server did
// not take (its delivery failed after retries) is an EUpstream error; the
// question stays open for another answer.

// maxRequestedSchemaBytes caps the schema an answer is checked against.
const maxRequestedSchemaBytes = 64 << 10

// Validate checks an answer against the question it answers: a known
// action; content only with "accept"; and, when the question carries a
// requested schema (input_required.requested_schema), content that matches
// it. Errors are EInvalid and name the failing field, never a value.
func (a InputAnswer) Validate(question map[string]any) error {
	switch a.Action {
	case InputAccept:
	case InputDecline, InputCancel:
		if a.Content != nil {
			return Errorf(EInvalid, "content is only sent with action \"accept\"")
		}
		return nil
	default:
		return Errorf(EInvalid, "action must be \"accept\", \"decline\" or \"cancel\"")
	}
	schema, ok := question["requested_schema"].(map[string]any)
	if !ok {
		return nil // the server asked in a form of its own: nothing to check
	}
	content := a.Content
	if content == nil {
		content = map[string]any{}
	}
	return validateRequested(schema, content)
}

// validateRequested checks content against an MCP elicitation's requested
// schema (a flat JSON Schema object). No reference is ever loaded.
func validateRequested(schema, content map[string]any) error {
	sb, err := json.Marshal(schema)
	if err != nil || len(sb) > maxRequestedSchemaBytes {
		return Errorf(EInvalid, "the task's requested schema cannot be used to check the answer")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sb))
	if err != nil {
		return Errorf(EInvalid, "the task's requested schema cannot be used to check the answer")
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file or network reference
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "mem:///requested_schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return Errorf(EInvalid, "the task's requested schema cannot be used to check the answer")
	}
	sch, err := c.Compile(url)
	if err != nil {
		return Errorf(EInvalid, "the task's requested schema cannot be used to check the answer")
	}
	cb, err := json.Marshal(content)
	if err != nil {
		return Errorf(EInvalid, "content must be a JSON object")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(cb))
	if err != nil {
		return Errorf(EInvalid, "content must be a JSON object")
	}
	if err := sch.Validate(inst); err != nil {
		return Errorf(EInvalid, "content does not match the requested schema: %s", schemaErrorText(err))
	}
	return nil
}

// schemaErrorText names where content failed, without quoting its values.
func schemaErrorText(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "invalid"
	}
	// The schema keywords that failed directly under the root (a oneOf
	// rather than each of its branches).
	causes := ve.Causes
	if len(causes) == 0 {
		causes = []*jsonschema.ValidationError{ve}
	}
	var where []string
	for _, e := range causes {
		w := fmt.Sprintf("/%s (%s)", strings.Join(e.InstanceLocation, "/"), strings.Join(e.ErrorKind.KeywordPath(), "/"))
		if !slices.Contains(where, w) {
			where = append(where, w)
		}
	}
	if len(where) > 5 {
		where = append(where[:5], "…")
	}
	return strings.Join(where, ", ")
}
