package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/mcpflow/mcpflow"
)

func (c *cli) approvalsCommand() *cobra.Command {
	var state, reason string
	cmd := &cobra.Command{
		Use:   "approvals [approve|deny TASK_ID] [--reason TEXT]",
		Short: "Calls waiting for your approval; approve or deny one",
		Long: `Without arguments, print the calls waiting for your approval (a policy rule with
effect "approve" names you or a group of yours), oldest first, with their arguments.
"approvals approve TASK_ID" calls the tool with those arguments; "approvals deny
TASK_ID" refuses the call. --reason is shown to the caller. --state lists approvals in
another state (approved, denied, expired, cancelled, calling, done).`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return nil
			case len(args) == 2 && (args[0] == "approve" || args[0] == "deny"):
				return nil
			}
			return usagef("usage: mcpflow approvals [approve|deny TASK_ID] [--reason TEXT]")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.listApprovals(cmd.Context(), state)
			}
			return c.decideApproval(cmd.Context(), args[1], args[0], reason)
		},
	}
	cmd.Flags().StringVar(&state, "state", mcpflow.ApprovalPending, "list approvals in this state")
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown to the caller)")
	return cmd
}

func (c *cli) listApprovals(ctx context.Context, state string) error {
	b, err := c.api.get(ctx, "/api/approvals", url.Values{"state": {state}})
	if err != nil {
		return err
	}
	var body struct {
		Approvals []json.RawMessage `json:"approvals"`
	}
	if err := decodeJSON(b, &body); err != nil {
		return err
	}
	if len(body.Approvals) == 0 && !c.json {
		fmt.Fprintf(c.stdout, "No %s approvals for you.\n", state)
	}
	for _, raw := range body.Approvals {
		var a mcpflow.Approval
		if c.json || decodeJSON(raw, &a) != nil {
			fmt.Fprintf(c.stdout, "%s\n", compactJSON(raw))
			continue
		}
		fmt.Fprintf(c.stdout, "%s  %s calls %s (rule %s) in thread %s, until %s\n  arguments %s\n", a.TaskID, a.UserID, a.Tool, a.Rule,
			a.ThreadID, a.Deadline.UTC().Format("2006-01-02T15:04:05Z"), compactJSON(a.Arguments))
	}
	return nil
}

func (c *cli) decideApproval(ctx context.Context, taskID, decision, reason string) error {
	b, err := c.api.do(ctx, http.MethodPost, "/api/approvals/"+url.PathEscape(taskID), nil,
		map[string]string{"decision": decision, "reason": reason}, requestTimeout)
	if err != nil {
		return err
	}
	if c.json {
		fmt.Fprintf(c.stdout, "%s\n", compactJSON(b))
		return nil
	}
	var a mcpflow.Approval
	if err := decodeJSON(b, &a); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: %s %s's call of %s.\n", a.TaskID, map[string]string{"approve": "approved", "deny": "denied"}[decision], a.UserID, a.Tool)
	return nil
}
