package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// serverRetry tracks a server whose tool discovery failed. Its fields are
// guarded by Runtime.mu; it belongs to the published states of one
// discovery (a configuration change starts over).
type serverRetry struct {
	srv      *config.Server
	attempts int           // failed discoveries in a row
	next     time.Time     // when the next retry is due
	cause    string        // why the last one failed (no secret)
	flight   chan struct{} // closed when the retry in flight ends; nil when none runs
}

// backoff is the wait after the n-th failure in a row: DiscoveryRetry,
// doubled after each further failure, capped at DiscoveryRetryMax.
func (r *Runtime) backoff(n int) time.Duration {
	d := r.opts.DiscoveryRetry
	for i := 1; i < n && d < r.opts.DiscoveryRetryMax; i++ {
		d *= 2
	}
	return min(d, r.opts.DiscoveryRetryMax)
}

// retryLocked starts the retry of sr when it is due and none runs, and
// returns the channel closed when the retry in flight ends (nil: none
// runs, the next one is not due yet).
func (r *Runtime) retryLocked(sr *serverRetry) chan struct{} {
	if sr.flight != nil {
		return sr.flight
	}
	if r.closed || time.Now().Before(sr.next) {
		return nil
	}
	sr.flight = make(chan struct{})
	r.bg.Add(1)
	go r.runRetry(sr, sr.flight)
	return sr.flight
}

// runRetry discovers sr's server again. On success the server's tools are
// published in a new state, if the configuration did not change meanwhile;
// on failure the next retry waits longer.
func (r *Runtime) runRetry(sr *serverRetry, done chan struct{}) {
	defer r.bg.Done()
	tools, err := r.discoverServer(sr.srv)
	r.mu.Lock()
	defer r.mu.Unlock()
	defer close(done)
	sr.flight = nil
	name := sr.srv.Name
	if err != nil {
		sr.attempts++
		wait := r.backoff(sr.attempts)
		sr.next = time.Now().Add(wait)
		sr.cause = r.discoveryCause(sr.srv, err)
		if r.ctx.Err() == nil {
			r.log.Warn("MCP server is still unavailable", "server", name, "reason", sr.cause, "attempts", sr.attempts, "retry_in", wait)
		}
		return
	}
	r.known[name] = toolNames(tools)
	cur := r.state
	if cur == nil || cur.down[name] != sr {
		return // the configuration changed meanwhile: its discovery decides
	}
	next := cur.clone()
	next.raw = maps.Clone(cur.raw)
	next.raw[name] = tools
	next.down = maps.Clone(cur.down)
	delete(next.down, name)
	r.assemble(next)
	r.state = next
	r.log.Info("MCP server is available again; its tools are listed", "server", name, "tools", len(tools), "attempts", sr.attempts)
}

// retryDue starts the due retries of st's down servers in the background.
func (r *Runtime) retryDue(st *toolState) {
	if len(st.down) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sr := range st.down {
		r.retryLocked(sr)
	}
}

// resolve returns the entry of the visible tool name, nil for a builtin or
// an unknown name. A name that may belong to a down server waits for that
// server's due retry; while the server stays down the answer is
// EUnavailable naming it.
func (r *Runtime) resolve(ctx context.Context, st *toolState, name string) (*toolEntry, error) {
	for range 3 {
		if e := st.byName[name]; e != nil || isBuiltin(name) {
			return e, nil
		}
		sr := r.ownerDown(st, name)
		if sr == nil {
			return nil, nil
		}
		r.mu.Lock()
		flight := r.retryLocked(sr)
		r.mu.Unlock()
		if flight == nil {
			return nil, r.unavailable(sr)
		}
		select {
		case <-flight:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		next, err := r.tools(ctx)
		if err != nil {
			return nil, err
		}
		if next.down[sr.srv.Name] == sr {
			if e := next.byName[name]; e != nil {
				return e, nil
			}
			return nil, r.unavailable(sr) // still down
		}
		st = next // it came back, or the configuration changed: look again
	}
	return st.byName[name], nil
}

// unavailable is the error of a call of a down server's tool.
func (r *Runtime) unavailable(sr *serverRetry) error {
	r.mu.Lock()
	cause, wait := sr.cause, time.Until(sr.next)
	r.mu.Unlock()
	retry := "it is retried at the next call or listing"
	if wait > 0 {
		retry = "it is retried in " + wait.Round(time.Second).String()
	}
	return mcpflow.Errorf(mcpflow.EUnavailable, "MCP server '%s' is unavailable (%s); %s", sr.srv.Name, cause, retry)
}

// ownerDown returns the down server that may own the visible tool name:
// one whose last good discovery in this process, or whose configuration
// (tools overrides), has a tool of that visible name, or, for a prefixed
// server never reached, any "<server>_..." name. Hidden task status and
// cancel tools are not owned.
func (r *Runtime) ownerDown(st *toolState, name string) *serverRetry {
	if len(st.down) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range st.ext.Servers {
		srv := &st.ext.Servers[i]
		sr := st.down[srv.Name]
		if sr == nil {
			continue
		}
		hidden := map[string]bool{}
		for _, ts := range srv.TaskToolsets {
			for _, n := range ts.HiddenTools() {
				hidden[n] = true
			}
		}
		visible := func(raw string) bool {
			if hidden[raw] {
				return false
			}
			if srv.ToolNamePrefix {
				return srv.Name+"_"+raw == name
			}
			return raw == name
		}
		known, seen := r.known[srv.Name]
		for _, raw := range known {
			if visible(raw) {
				return sr
			}
		}
		for raw := range srv.Tools {
			if visible(raw) {
				return sr
			}
		}
		if raw, ok := strings.CutPrefix(name, srv.Name+"_"); ok && !seen && srv.ToolNamePrefix && !hidden[raw] {
			return sr
		}
	}
	return nil
}

// withoutURL drops the URL from an HTTP client error (a *url.Error says
// `Post "https://host/mcp?token=…": …`), for logs: a server URL may carry
// credentials in its query.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, "(server url)", ue.Err)
	}
	return err
}
