package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/spf13/cobra"
)

// eventWait is the long poll of events --follow (the API's longest).
const eventWait = 60 * time.Second

// eventView is an inbox event as the client shows it.
type eventView struct {
	Seq           json.Number    `json:"seq"`
	TaskID        string         `json:"task_id"`
	TaskName      string         `json:"task_name"`
	Status        string         `json:"status"`
	CreatedAt     string         `json:"created_at"`
	Error         *string        `json:"error"`
	Result        any            `json:"result"`
	ResultPreview *string        `json:"result_preview"`
	InputRequired map[string]any `json:"input_required"`
}

func (c *cli) eventsCommand() *cobra.Command {
	var after int64
	var limit int
	var follow bool
	cmd := &cobra.Command{
		Use:   "events [--follow] [--after SEQ]",
		Short: "The thread's task events (its inbox), in order",
		Long: `Print the thread's task events (every version of every task: status
changes, questions, results) in order, after --after SEQ (exclusive; default 0, all).
With --follow, keep waiting for new ones (long polls of up to 60 s) until
interrupted; a thread that does not exist yet is created. --json prints each event as one JSON object per line.`,
		Args: exactArgs(0, "[--follow] [--after SEQ]"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if after < 0 {
				return usagef("--after must be a non-negative sequence number (got %d)", after)
			}
			if limit < 1 || limit > 1000 {
				return usagef("--limit must be from 1 to 1000 (got %d)", limit)
			}
			return c.events(cmd.Context(), after, limit, follow)
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "print events after this seq (exclusive)")
	cmd.Flags().IntVar(&limit, "limit", 100, "events per request (1-1000)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep waiting for new events until interrupted")
	return cmd
}

// events prints the events after after; with follow it long-polls for more
// until ctx ends, which is a normal end (exit 0).
func (c *cli) events(ctx context.Context, after int64, limit int, follow bool) error {
	created := false
	for {
		q := url.Values{"after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(limit)}}
		timeout := requestTimeout
		if follow {
			q.Set("wait", strconv.Itoa(int(eventWait.Seconds())))
			timeout = eventWait + requestTimeout
		}
		b, err := c.api.do(ctx, http.MethodGet, c.threadPath("events"), q, nil, timeout)
		if err != nil {
			if follow && ctx.Err() != nil {
				return nil
			}
			var ae *apiError
			if follow && !created && errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Message == "thread not found" {
				// Following a thread that does not exist yet: create it (as
				// tools and call do) and wait for its first event.
				created = true
				if _, err := c.api.do(ctx, http.MethodPost, "/api/threads", nil, map[string]string{"thread_id": c.thread}, requestTimeout); err != nil {
					return err
				}
				continue
			}
			if follow && errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests {
				// Too many long polls open for this user: wait a moment.
				if !sleepCtx(ctx, time.Second) {
					return nil
				}
				continue
			}
			return err
		}
		var body struct {
			Events []json.RawMessage `json:"events"`
			Next   int64             `json:"next"`
		}
		if err := decodeJSON(b, &body); err != nil {
			return err
		}
		for _, raw := range body.Events {
			c.printEvent(raw)
		}
		if body.Next > after {
			after = body.Next
		}
		if !follow && len(body.Events) < limit {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (c *cli) printEvent(raw json.RawMessage) {
	var e eventView
	if c.json || decodeJSON(raw, &e) != nil {
		fmt.Fprintf(c.stdout, "%s\n", compactJSON(raw))
		return
	}
	parts := []string{"#" + e.Seq.String(), e.CreatedAt, e.TaskID, e.TaskName, e.Status}
	var t taskView
	t.Status, t.InputRequired = mcpflow.Status(e.Status), e.InputRequired
	switch {
	case e.Error != nil:
		parts = append(parts, "error: "+firstLine(*e.Error, 120))
	case t.question() != "":
		parts = append(parts, "question: "+firstLine(t.question(), 120))
	case e.Result != nil:
		parts = append(parts, "result: "+firstLine(oneLineJSON(e.Result), 120))
	case e.ResultPreview != nil:
		parts = append(parts, "result: "+firstLine(*e.ResultPreview, 120))
	}
	fmt.Fprintln(c.stdout, strings.Join(parts, "  "))
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
