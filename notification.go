package mcpflow

import (
	"fmt"
	"time"
)

// MaxNotificationAttempts is the number of counted delivery failures of one
// event version after which it is dead-lettered (spec §2.8).
const MaxNotificationAttempts = 5

// Notification is a task's event and delivery state: spec §2.5's event
// recording and §2.8's delivery phases, kept by the task's workflow (the
// single writer) instead of lease columns. Its methods are the transitions;
// they are deterministic, so workflow code applies them.
//
// Only the newest event version is ever delivered: an attempt always
// carries EventVersion, and a version newer than the one last attempted
// starts a fresh failure budget. While a delivery is in flight (dispatched)
// or waiting to be retried, a newer event only bumps EventVersion; it goes
// next.
type Notification struct {
	Status          string     `json:"status"` // NotificationNone, …Pending, …Dispatched, …Retry, …Delivered, …DeadLetter
	Error           *string    `json:"error,omitempty"`
	AttemptCount    int        `json:"attempt_count"`             // counted failures of DispatchVersion
	EventVersion    int        `json:"event_version"`             // newest recorded event, 0 = none yet
	Fingerprint     string     `json:"fingerprint,omitempty"`     // of the newest event
	NotifiedVersion int        `json:"notified_version"`          // newest delivered version
	DispatchVersion int        `json:"dispatch_version"`          // version of the last attempt
	DispatchAttempt int        `json:"dispatch_attempt"`          // POSTs of DispatchVersion so far, busy ones included
	NextAttemptAt   *time.Time `json:"next_attempt_at,omitempty"` // while Status is retry
}

// Record registers the event whose fingerprint is fp. It returns the new
// version and true, or the current version and false when fp is the newest
// event's fingerprint already (nothing changed). A row that is not being
// delivered becomes pending with its error and counts reset.
func (n *Notification) Record(fp string) (int, bool) {
	if fp == n.Fingerprint {
		return n.EventVersion, false
	}
	n.EventVersion++
	n.Fingerprint = fp
	if !n.InFlight() {
		n.Status = NotificationPending
		n.Error = nil
		n.AttemptCount = 0
		n.NextAttemptAt = nil
	}
	return n.EventVersion, true
}

// InFlight reports whether a delivery is under way: an attempt was made or
// is being made and its version is neither delivered nor dead-lettered.
func (n *Notification) InFlight() bool {
	return n.Status == NotificationDispatched || n.Status == NotificationRetry
}

// Undelivered reports whether there is delivery work: a pending event, an
// attempt to retry, or an attempt that was under way when the run ended.
func (n *Notification) Undelivered() bool {
	return n.Status == NotificationPending || n.InFlight()
}

// Dispatch starts a delivery attempt of the newest version and returns that
// version and the attempt's number (1, 2, 3, … per version, busy retries
// included). A version other than the last attempted one starts with a
// fresh budget.
func (n *Notification) Dispatch() (version, attempt int) {
	if n.EventVersion != n.DispatchVersion {
		n.DispatchVersion = n.EventVersion
		n.DispatchAttempt = 0
		n.AttemptCount = 0
		n.Error = nil
	}
	n.DispatchAttempt++
	n.Status = NotificationDispatched
	n.NextAttemptAt = nil
	return n.DispatchVersion, n.DispatchAttempt
}

// Delivered records the success of the attempt at DispatchVersion; a newer
// event, if any, is pending next.
func (n *Notification) Delivered() {
	n.NotifiedVersion = n.DispatchVersion
	n.Error = nil
	n.AttemptCount = 0
	n.NextAttemptAt = nil
	if n.EventVersion > n.NotifiedVersion {
		n.Status = NotificationPending
		return
	}
	n.Status = NotificationDelivered
}

// Busy records a receiver that could not take the event now (409): the
// attempt is retried at next, and not counted.
func (n *Notification) Busy(msg string, next time.Time) {
	n.Status = NotificationRetry
	n.Error = &msg
	n.NextAttemptAt = &next
}

// Failed records a counted failure of the attempt. The MaxNotificationAttempts-th
// failure dead-letters the version (DeadLetter); otherwise it is retried at
// the time backoff returns for the number of failures before this one. It
// reports whether the version was dead-lettered.
func (n *Notification) Failed(msg string, now time.Time, backoff func(earlierFailures int) time.Duration) bool {
	n.AttemptCount++
	if n.AttemptCount >= MaxNotificationAttempts {
		n.DeadLetter(fmt.Sprintf("Notification delivery stopped after %d failed attempts: %s", n.AttemptCount, msg), false)
		return true
	}
	n.Status = NotificationRetry
	n.Error = &msg
	next := now.Add(backoff(n.AttemptCount - 1))
	n.NextAttemptAt = &next
	return false
}

// DeadLetter gives up on DispatchVersion with msg; counted adds the failure
// that caused it to AttemptCount. If a newer event exists, the row returns
// to pending with its error and counts reset, so the newer event is still
// delivered. Messages are cut to MaxErrorChars.
func (n *Notification) DeadLetter(msg string, counted bool) {
	if counted {
		n.AttemptCount++
	}
	n.NextAttemptAt = nil
	if n.EventVersion > n.DispatchVersion {
		n.Status = NotificationPending
		n.Error = nil
		n.AttemptCount = 0
		return
	}
	msg = TruncateChars(msg, MaxErrorChars)
	n.Status = NotificationDeadLetter
	n.Error = &msg
}

// Apply copies the notification fields onto the task's row.
func (n *Notification) Apply(t *Task) {
	t.NotificationStatus = n.Status
	if t.NotificationStatus == "" {
		t.NotificationStatus = NotificationNone
	}
	t.NotificationError = n.Error
	t.NotificationAttemptCount = n.AttemptCount
	t.EventVersion = n.EventVersion
	t.NotifiedVersion = n.NotifiedVersion
	t.EventFingerprint = nil
	if n.Fingerprint != "" {
		fp := n.Fingerprint
		t.EventFingerprint = &fp
	}
}

// InboxNotification is the notification state a row written with inbox
// delivery only (no webhook) stands for: every version was dispatched once
// and delivered, or dead-lettered when its thread was gone. It lets a writer
// go on from the row instead of from a state it carried (the poll activity
// that reports by signal, and the workflow adopting what that activity
// wrote). Only valid for tasks without a webhook.
func InboxNotification(t *Task) Notification {
	n := Notification{Status: t.NotificationStatus, Error: t.NotificationError, AttemptCount: t.NotificationAttemptCount,
		EventVersion: t.EventVersion, NotifiedVersion: t.NotifiedVersion}
	if n.Status == NotificationNone {
		n.Status = ""
	}
	if t.EventFingerprint != nil {
		n.Fingerprint = *t.EventFingerprint
	}
	if n.EventVersion > 0 {
		n.DispatchVersion, n.DispatchAttempt = n.EventVersion, 1
	}
	return n
}

// DeliveryOutcome is the result of one webhook POST (DESIGN.md webhook
// contract).
type DeliveryOutcome string

// Delivery outcomes.
const (
	DeliveryDelivered DeliveryOutcome = "delivered" // 2xx
	DeliveryBusy      DeliveryOutcome = "busy"      // 409: retry after poll_interval, not counted
	DeliveryGone      DeliveryOutcome = "gone"      // 404/410, or a deleted or foreign thread: dead letter now
	DeliveryFailed    DeliveryOutcome = "failed"    // anything else, no answer included: counted, retried with backoff
)
