package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpflow/mcpflow"
)

func (c *cli) auditCommand() *cobra.Command {
	var f struct {
		user, tool, decision, kind, since, until string
		limit                                    int
		all                                      bool
	}
	cmd := &cobra.Command{
		Use:   "audit [--user U] [--tool T] [--decision allow|deny|approve] [--kind K] [--since TIME] [--until TIME]",
		Short: "The audit log, newest first (an admin token)",
		Long: `Print the audit log (audit.enabled in config.yaml), newest first: who called
which tool through which surface, what the policies decided and how the call ended;
task cancels and answers; changes of the servers and the policies. It needs an admin
token (--token or $MCPFLOW_TOKEN). --since and --until are RFC 3339 times; --all pages
through every record the filters select (default: the first --limit). --json prints
each record as one JSON object per line.`,
		Args: exactArgs(0, "[--user U] [--tool T] [--decision allow|deny|approve] [--kind K] [--since TIME] [--until TIME]"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.limit < 1 || f.limit > 1000 {
				return usagef("--limit must be from 1 to 1000 (got %d)", f.limit)
			}
			q := url.Values{"limit": {strconv.Itoa(f.limit)}}
			for k, v := range map[string]string{"user": f.user, "tool": f.tool, "decision": f.decision, "kind": f.kind, "since": f.since, "until": f.until} {
				if v != "" {
					q.Set(k, v)
				}
			}
			return c.audit(cmd.Context(), q, f.all)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.user, "user", "", "only this user's records")
	fl.StringVar(&f.tool, "tool", "", "only this tool's records (the name callers see)")
	fl.StringVar(&f.decision, "decision", "", "only records with this policy decision (allow, deny or approve)")
	fl.StringVar(&f.kind, "kind", "", "only records of this kind (call, task_cancel, task_answer, approval, config, policies)")
	fl.StringVar(&f.since, "since", "", "only records at or after this RFC 3339 time")
	fl.StringVar(&f.until, "until", "", "only records before this RFC 3339 time")
	fl.IntVar(&f.limit, "limit", 100, "records per request (1-1000)")
	fl.BoolVar(&f.all, "all", false, "print every record the filters select")
	return cmd
}

func (c *cli) audit(ctx context.Context, q url.Values, all bool) error {
	for {
		b, err := c.api.get(ctx, "/api/audit", q)
		if err != nil {
			return err
		}
		var body struct {
			Records []json.RawMessage `json:"records"`
			Next    *string           `json:"next"`
		}
		if err := decodeJSON(b, &body); err != nil {
			return err
		}
		for _, raw := range body.Records {
			c.printAudit(raw)
		}
		if !all || body.Next == nil {
			return nil
		}
		q.Set("before", *body.Next)
	}
}

func (c *cli) printAudit(raw json.RawMessage) {
	var r mcpflow.AuditRecord
	if c.json || decodeJSON(raw, &r) != nil {
		fmt.Fprintf(c.stdout, "%s\n", compactJSON(raw))
		return
	}
	who := r.UserID
	if r.Admin {
		who = strings.TrimSpace(who + " (admin)")
	}
	parts := []string{r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Kind, who, r.Surface}
	switch r.Kind {
	case mcpflow.AuditCall:
		d := r.Decision
		if r.Rule != "" {
			d += " by " + r.Rule
		}
		parts = append(parts, r.Tool, d, r.Outcome, fmt.Sprintf("%.1f ms", r.LatencyMS))
		if r.TaskID != "" {
			parts = append(parts, "task "+r.TaskID)
		}
		if r.Arguments != "" {
			parts = append(parts, "arguments "+r.Arguments)
		}
	case mcpflow.AuditTaskCancel, mcpflow.AuditTaskAnswer:
		parts = append(parts, r.TaskID, r.Tool, r.Outcome)
	case mcpflow.AuditApproval:
		parts = append(parts, r.TaskID, r.Tool, r.Decision, r.Detail)
	case mcpflow.AuditPrompt, mcpflow.AuditResource:
		parts = append(parts, r.Tool, r.Outcome, fmt.Sprintf("%.1f ms", r.LatencyMS))
	default:
		parts = append(parts, r.Detail)
	}
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	fmt.Fprintln(c.stdout, strings.Join(out, "  "))
}
