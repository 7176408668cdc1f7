package mcpflow

import "fmt"

// Status is the normalized status of a durable MCP task (spec §2.1).
type Status string

// Task statuses.
const (
	StatusSubmitted     Status = "submitted"
	StatusWorking       Status = "working"
	StatusInputRequired Status = "input_required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusSubmitted, StatusWorking, StatusInputRequired, StatusCompleted, StatusFailed, StatusCancelled}

// ParseStatus coerces a string to a Status; unknown strings are an error.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown MCP task status %q", s)
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	_, err := ParseStatus(string(s))
	return err == nil
}

// IsPollable reports whether the remote task still needs polling:
// submitted, working or input_required.
func (s Status) IsPollable() bool {
	return s == StatusSubmitted || s == StatusWorking || s == StatusInputRequired
}

// IsTerminal reports whether s is completed, failed or cancelled. A terminal
// status never changes again.
func (s Status) IsTerminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// NeedsAttention reports whether the user must hear about a task in this
// status: input_required or any terminal status.
func (s Status) NeedsAttention() bool {
	return s == StatusInputRequired || s.IsTerminal()
}
