package demomcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/config"
)

// Outcomes a job can be submitted with.
const (
	outcomeCompleted     = "completed"
	outcomeFailed        = "failed"
	outcomeInputRequired = "input_required"
	outcomeAsk           = "ask"
	outcomeNotFound      = "not_found"
)

// Actions of an answer_job answer (those of an MCP elicitation result).
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// Statuses the task tools report (spec §2.3 vocabulary).
const (
	statusRunning       = "running"
	statusInputRequired = "input_required"
	statusCompleted     = "completed"
	statusFailed        = "failed"
	statusCancelled     = "cancelled"
)

const (
	errorCodeTaskNotFound     = "task_not_found"
	errorCodeInputNotRequired = "input_not_required"
	defaultJobError           = "job failed"
	expiredJobError           = "job expired"
	unknownJobError           = "unknown job"
	stateFileVersion          = 1
)

// jobRecord is one submitted job as persisted in the state file. Progress is
// derived from wall-clock time since CreatedAt, so it continues across
// restarts.
type jobRecord struct {
	ID               string          `json:"id"`
	Label            string          `json:"label,omitempty"`
	CreatedAt        time.Time       `json:"created_at"`
	DurationSeconds  float64         `json:"duration_seconds"`
	Outcome          string          `json:"outcome"`
	PollAfterSeconds *float64        `json:"poll_after_seconds,omitempty"`
	Progress         bool            `json:"progress,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	Error            string          `json:"error,omitempty"`
	StatusErrorsLeft int             `json:"status_errors_left,omitempty"`
	Cancelled        bool            `json:"cancelled,omitempty"`
	// AnswerDurationSeconds is how long the job runs on after an answer.
	AnswerDurationSeconds float64 `json:"answer_duration_seconds,omitempty"`
	// FinishAtStatusCall, when > 0, ends the job at its N-th status call
	// instead of after DurationSeconds: a poll count that no timing moves.
	FinishAtStatusCall int `json:"finish_at_status_call,omitempty"`
	// StatusDelaySeconds is how long each of its status calls waits
	// (after counting, before answering): a slow remote status call.
	StatusDelaySeconds float64 `json:"status_delay_seconds,omitempty"`
	// AnswerErrorsLeft is how many more answer_job calls refuse the
	// answer (isError) instead of taking it.
	AnswerErrorsLeft int `json:"answer_errors_left,omitempty"`
	// CancelErrorsLeft is how many more cancel_job calls fail (isError)
	// instead of cancelling.
	CancelErrorsLeft int `json:"cancel_errors_left,omitempty"`
	// HoldAnswers makes answer_job calls wait until release_answers.
	HoldAnswers bool `json:"hold_answers,omitempty"`
	// Answer is the answer its question got; nil while unanswered.
	Answer      *jobAnswer `json:"answer,omitempty"`
	Submits     int        `json:"submits"`
	StatusCalls int        `json:"status_calls"`
	CancelCalls int        `json:"cancel_calls"`
	AnswerCalls int        `json:"answer_calls,omitempty"`
}

// jobAnswer is the answer_job answer a job took.
type jobAnswer struct {
	At      time.Time      `json:"at"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// askQuestion is the input_required payload of an "ask" job: an MCP
// elicitation (message and requested_schema) that mcpflow checks answers
// against.
func askQuestion() map[string]any {
	return map[string]any{
		"message": "Which format should the report have?",
		"requested_schema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"format": map[string]any{"type": "string", "enum": []any{"pdf", "csv"}},
			},
			"required": []any{"format"},
		},
	}
}

// status is the job's status at now.
func (j *jobRecord) status(now time.Time) string {
	if j.Cancelled {
		return statusCancelled
	}
	if j.Answer != nil {
		if now.Sub(j.Answer.At) < time.Duration(j.AnswerDurationSeconds*float64(time.Second)) {
			return statusRunning
		}
		return statusCompleted
	}
	if j.FinishAtStatusCall > 0 {
		if j.StatusCalls < j.FinishAtStatusCall {
			return statusRunning
		}
	} else if now.Sub(j.CreatedAt) < time.Duration(j.DurationSeconds*float64(time.Second)) {
		return statusRunning
	}
	switch j.Outcome {
	case outcomeFailed, outcomeNotFound:
		return statusFailed
	case outcomeInputRequired, outcomeAsk:
		return statusInputRequired
	default:
		return statusCompleted
	}
}

// statusPayload is the get_job_status structuredContent for the job at now.
func (j *jobRecord) statusPayload(now time.Time) map[string]any {
	p := map[string]any{"task_id": j.ID}
	st := j.status(now)
	p["status"] = st
	switch st {
	case statusRunning:
		if j.PollAfterSeconds != nil {
			p["poll_after_seconds"] = *j.PollAfterSeconds
		}
		if j.Progress && j.DurationSeconds > 0 {
			quarter := min(int(4*now.Sub(j.CreatedAt).Seconds()/j.DurationSeconds), 3)
			p["message"] = fmt.Sprintf("%d%% done", 25*quarter)
		}
	case statusInputRequired:
		if j.Outcome == outcomeAsk {
			p["input_required"] = askQuestion()
			break
		}
		p["input_required"] = map[string]any{
			"question": "Which format?",
			"options":  []string{"pdf", "csv"},
		}
	case statusCompleted:
		p["result"] = j.result()
	case statusFailed:
		if j.Outcome == outcomeNotFound {
			p["error_code"] = errorCodeTaskNotFound
			p["error"] = expiredJobError
		} else {
			p["error"] = j.errorText()
		}
	}
	return p
}

// terminalPayload is the cancel_job structuredContent for a job that is
// already terminal at now: the actual status with its result or error, and
// no error_code, input_required or poll hint.
func (j *jobRecord) terminalPayload(now time.Time) map[string]any {
	p := map[string]any{"task_id": j.ID, "status": j.status(now)}
	switch p["status"] {
	case statusCompleted:
		p["result"] = j.result()
	case statusFailed:
		if j.Outcome == outcomeNotFound {
			p["error"] = expiredJobError
		} else {
			p["error"] = j.errorText()
		}
	}
	return p
}

// result is the job's result: once answered {"action", "answer"?} (the
// content of an accepted answer), else the submitted result.
func (j *jobRecord) result() any {
	if j.Answer != nil {
		r := map[string]any{"action": j.Answer.Action}
		if j.Answer.Action == actionAccept {
			content := j.Answer.Content
			if content == nil {
				content = map[string]any{}
			}
			r["answer"] = content
		}
		return r
	}
	var v any
	if err := json.Unmarshal(j.Result, &v); err != nil {
		return nil
	}
	return v
}

func (j *jobRecord) errorText() string {
	if j.Error == "" {
		return defaultJobError
	}
	return j.Error
}

// stateData is the whole persisted state: global call counters and jobs.
type stateData struct {
	Version     int                   `json:"version"`
	Submits     int                   `json:"submits"`
	StatusCalls int                   `json:"status_calls"`
	Cancels     int                   `json:"cancels"`
	Answers     int                   `json:"answers,omitempty"`
	Jobs        map[string]*jobRecord `json:"jobs"`
	// Keys maps a submit's idempotency key to the job it started.
	Keys map[string]string `json:"keys,omitempty"`
}

// jobSpec is what submit_job asks for, already validated.
type jobSpec struct {
	Label            string
	DurationSeconds  float64
	Outcome          string
	PollAfterSeconds *float64
	Result           json.RawMessage
	Error            string
	StatusErrors     int
	// AnswerDurationSeconds is how long the job runs on after an answer.
	AnswerDurationSeconds float64
	// FinishAtStatusCall, when > 0, ends the job at its N-th status call
	// (earlier ones answer running), whatever DurationSeconds says.
	FinishAtStatusCall int
	// StatusDelaySeconds delays every status call of the job.
	StatusDelaySeconds float64
	// Progress reports a progress message while the job runs.
	Progress bool
	// AnswerErrors and CancelErrors refuse that many answer_job and
	// cancel_job calls; HoldAnswers holds answer_job calls until
	// release_answers.
	AnswerErrors, CancelErrors int
	HoldAnswers                bool
}

// errStatusUnavailable is returned by jobStore.status while a job still has
// injected status errors left.
var errStatusUnavailable = errors.New("upstream temporarily unavailable")

// errAnswerRefused and errCancelRefused are returned by jobStore.answer
// and jobStore.cancel while a job has injected answer or cancel errors
// left.
var (
	errAnswerRefused = errors.New("the job cannot take an answer right now")
	errCancelRefused = errors.New("the job cannot be cancelled right now")
)

// maxAnswerHold bounds how long a held answer_job call waits for
// release_answers.
const maxAnswerHold = time.Minute

// answerGate holds the answer_job calls of one job until release_answers.
type answerGate struct {
	open    chan struct{}
	waiting int
}

// jobStore holds the jobs and counters behind one mutex and, when path is
// set, writes them to path after every mutation.
type jobStore struct {
	mu    sync.Mutex
	path  string
	now   func() time.Time
	data  stateData
	gates map[string]*answerGate // held answer_job calls (memory only)
}

// openJobStore loads the state file at path (a missing file is an empty
// state); an empty path keeps the state in memory only.
func openJobStore(path string, now func() time.Time) (*jobStore, error) {
	s := &jobStore{path: path, now: now, data: stateData{Version: stateFileVersion, Jobs: map[string]*jobRecord{}}}
	if path == "" {
		return s, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	if err := json.Unmarshal(raw, &s.data); err != nil {
		return nil, fmt.Errorf("decode state file %s: %w", path, err)
	}
	if s.data.Jobs == nil {
		s.data.Jobs = map[string]*jobRecord{}
	}
	s.data.Version = stateFileVersion
	return s, nil
}

// submit creates a job and answers the submit_job payload. A repeated
// idempotency key (non-empty) starts nothing: it answers the job that key
// started, counted as one more submit of that job.
func (s *jobStore) submit(spec jobSpec, key string) (map[string]any, error) {
	id, err := newJobID()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.Submits++
	if j, ok := s.data.Jobs[s.data.Keys[key]]; ok && key != "" {
		j.Submits++
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return map[string]any{"task_id": j.ID, "status": statusRunning}, nil
	}
	if key != "" {
		if s.data.Keys == nil {
			s.data.Keys = map[string]string{}
		}
		s.data.Keys[key] = id
	}
	s.data.Jobs[id] = &jobRecord{
		ID:               id,
		Label:            spec.Label,
		CreatedAt:        s.now().UTC(),
		DurationSeconds:  spec.DurationSeconds,
		Outcome:          spec.Outcome,
		PollAfterSeconds: spec.PollAfterSeconds,
		Progress:         spec.Progress,
		Result:           spec.Result,
		Error:            spec.Error,
		StatusErrorsLeft: spec.StatusErrors,
		Submits:          1,

		AnswerDurationSeconds: spec.AnswerDurationSeconds,
		FinishAtStatusCall:    spec.FinishAtStatusCall,
		StatusDelaySeconds:    spec.StatusDelaySeconds,
		AnswerErrorsLeft:      spec.AnswerErrors,
		CancelErrorsLeft:      spec.CancelErrors,
		HoldAnswers:           spec.HoldAnswers,
	}
	if err := s.persistLocked(); err != nil {
		return nil, err
	}
	return map[string]any{"task_id": id, "status": statusRunning}, nil
}

// status answers the get_job_status payload. It returns
// errStatusUnavailable while the job has injected status errors left.
func (s *jobStore) status(id string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.StatusCalls++
	j, ok := s.data.Jobs[id]
	if !ok {
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return map[string]any{
			"task_id":    id,
			"status":     statusFailed,
			"error_code": errorCodeTaskNotFound,
			"error":      unknownJobError,
		}, nil
	}
	j.StatusCalls++
	injected := j.StatusErrorsLeft > 0
	if injected {
		j.StatusErrorsLeft--
	}
	if err := s.persistLocked(); err != nil {
		return nil, err
	}
	if injected {
		return nil, errStatusUnavailable
	}
	return j.statusPayload(s.now()), nil
}

// cancel cancels a running or input_required job and answers the cancel_job
// payload; for a terminal job it reports the actual terminal status.
func (s *jobStore) cancel(id string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.Cancels++
	j, ok := s.data.Jobs[id]
	if !ok {
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return map[string]any{"task_id": id, "status": statusFailed, "error": unknownJobError}, nil
	}
	j.CancelCalls++
	if j.CancelErrorsLeft > 0 {
		j.CancelErrorsLeft--
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return nil, errCancelRefused
	}
	now := s.now()
	if st := j.status(now); st == statusRunning || st == statusInputRequired {
		j.Cancelled = true
	}
	if err := s.persistLocked(); err != nil {
		return nil, err
	}
	return j.terminalPayload(now), nil
}

// answer takes an answer to the question of a job in input_required and
// answers the answer_job payload {"task_id", "status"}: accept and decline
// resume the job (it completes AnswerDurationSeconds later with the answer
// as result), cancel cancels it. A job that does not wait for input answers
// error_code "input_not_required" with its status, an unknown job
// "task_not_found"; neither takes the answer. While the job has injected
// answer errors left it returns errAnswerRefused without taking it.
func (s *jobStore) answer(id, action string, content map[string]any) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data.Answers++
	j, ok := s.data.Jobs[id]
	if !ok {
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return map[string]any{"task_id": id, "status": statusFailed, "error_code": errorCodeTaskNotFound, "error": unknownJobError}, nil
	}
	j.AnswerCalls++
	now := s.now()
	if st := j.status(now); st != statusInputRequired {
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return map[string]any{"task_id": id, "status": st, "error_code": errorCodeInputNotRequired,
			"error": fmt.Sprintf("job is %s, not waiting for input", st)}, nil
	}
	if j.AnswerErrorsLeft > 0 {
		j.AnswerErrorsLeft--
		if err := s.persistLocked(); err != nil {
			return nil, err
		}
		return nil, errAnswerRefused
	}
	j.Answer = &jobAnswer{At: now.UTC(), Action: action, Content: content}
	if action == actionCancel {
		j.Cancelled = true
	}
	if err := s.persistLocked(); err != nil {
		return nil, err
	}
	return map[string]any{"task_id": id, "status": j.status(now)}, nil
}

// holdAnswer makes an answer_job call of a job submitted with
// hold_answers wait until release_answers opens its gate (at most
// maxAnswerHold); other calls go on at once.
func (s *jobStore) holdAnswer(id string) {
	s.mu.Lock()
	j, ok := s.data.Jobs[id]
	if !ok || !j.HoldAnswers {
		s.mu.Unlock()
		return
	}
	if s.gates == nil {
		s.gates = map[string]*answerGate{}
	}
	g := s.gates[id]
	if g == nil {
		g = &answerGate{open: make(chan struct{})}
		s.gates[id] = g
	}
	g.waiting++
	s.mu.Unlock()
	timer := time.NewTimer(maxAnswerHold)
	defer timer.Stop()
	select {
	case <-g.open:
	case <-timer.C:
	}
	s.mu.Lock()
	g.waiting--
	s.mu.Unlock()
}

// releaseAnswers lets the answer_job calls a job holds go on, and later
// ones through, and answers {"task_id", "released": <calls let go>}.
func (s *jobStore) releaseAnswers(id string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.data.Jobs[id]
	if !ok {
		return map[string]any{"task_id": id, "status": statusFailed, "error_code": errorCodeTaskNotFound, "error": unknownJobError}, nil
	}
	j.HoldAnswers = false
	released := 0
	if g := s.gates[id]; g != nil {
		released = g.waiting
		close(g.open)
		delete(s.gates, id)
	}
	if err := s.persistLocked(); err != nil {
		return nil, err
	}
	return map[string]any{"task_id": id, "released": released}, nil
}

// stats answers the job_stats payload.
func (s *jobStore) stats() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	jobs := make(map[string]any, len(s.data.Jobs))
	for _, id := range slices.Sorted(maps.Keys(s.data.Jobs)) {
		j := s.data.Jobs[id]
		jobs[id] = map[string]any{
			"status":       j.status(now),
			"label":        j.Label,
			"submits":      j.Submits,
			"status_calls": j.StatusCalls,
			"cancel_calls": j.CancelCalls,
			"answer_calls": j.AnswerCalls,
		}
		if g := s.gates[id]; g != nil && g.waiting > 0 {
			jobs[id].(map[string]any)["answers_held"] = g.waiting
		}
	}
	return map[string]any{
		"submits":      s.data.Submits,
		"status_calls": s.data.StatusCalls,
		"cancels":      s.data.Cancels,
		"answers":      s.data.Answers,
		"jobs":         jobs,
	}
}

// persistLocked writes the state atomically (temp file in the same
// directory, fsync, rename). The caller holds s.mu.
func (s *jobStore) persistLocked() error {
	if s.path == "" {
		return nil
	}
	raw, err := json.MarshalIndent(s.data, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := writeFileAtomic(s.path, raw); err != nil {
		return fmt.Errorf("persist state: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return config.WriteFileAtomic(path, data, nil)
}

func newJobID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate job id: %w", err)
	}
	return "job-" + hex.EncodeToString(b[:]), nil
}

// statusDelay is how long a status call of job id waits (0 for unknown
// jobs).
func (s *jobStore) statusDelay(id string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.data.Jobs[id]; ok {
		return time.Duration(j.StatusDelaySeconds * float64(time.Second))
	}
	return 0
}
