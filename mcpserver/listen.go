package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Notification methods of 2026-07-28 subscriptions.
const (
	methodSubscriptionsAcked = "notifications/subscriptions/acknowledged"
	methodTaskNotification   = "notifications/tasks" // the Tasks extension's
	maxListenTasks           = 100
)

// listenFilter is subscriptions/listen's params.notifications. mcpflow
// honors taskIds (the Tasks extension), and resourceSubscriptions and the
// prompts' and resources' list changes through the runtime; not
// toolsListChanged.
type listenFilter struct {
	TaskIDs               []string `json:"taskIds"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
}

// listen serves subscriptions/listen: an SSE stream whose first message
// acknowledges the honored filter (the caller's own tasks among taskIds),
// followed by notifications/tasks (the task as tasks/get shows it) each
// time one of them changes, until every one ended, the client closes the
// stream or the server stops; then the listen result ends it. The changes
// come from the thread inbox, so they reach the stream from any replica.
// The stream holds one of the user's stream slots.
func (c *call) listen(ctx context.Context) (any, *rpcError) {
	if c.msg.paramsErr != nil {
		return nil, c.msg.paramsErr
	}
	n := c.msg.Params.Notifications
	if n == nil || !isJSONObject(*n) {
		return nil, invalidParams("params.notifications (the subscription filter) is required and must be an object")
	}
	var f listenFilter
	if err := json.Unmarshal(*n, &f); err != nil {
		return nil, invalidParams("params.notifications: taskIds and resourceSubscriptions must be arrays of strings, promptsListChanged and resourcesListChanged booleans")
	}
	if len(f.TaskIDs) > 0 && !c.caps().tasksExt {
		return c.refuse(needTasksExt("subscriptions/listen with taskIds"))
	}
	if len(f.TaskIDs) > maxListenTasks || len(f.ResourceSubscriptions) > maxListenTasks {
		return nil, invalidParams("params.notifications: at most %d task ids and %d resources per subscription", maxListenTasks, maxListenTasks)
	}
	honored := []string{}
	if c.s.tasksEnabled() {
		for _, id := range f.TaskIDs {
			if _, rerr := c.ownTask(ctx, id); rerr == nil && !slices.Contains(honored, id) {
				honored = append(honored, id)
			}
		}
	}
	subID := c.msg.ID
	subMeta := map[string]any{metaSubscription: subID}
	// The stream's slot first: nothing is subscribed for a stream refused.
	release, ok := slot(c.req.AcquireStream)
	if !ok {
		c.answered = true
		tooMany(c.w, c.msg.ID, "too many streams open for this user (server.max_mcp_streams_per_user): close a subscription or retry shortly")
		return nil, nil
	}
	defer release()
	acked := map[string]any{"taskIds": honored}
	notes, uris, lists, unsubscribe := c.subscribeResources(ctx, f, subMeta)
	defer unsubscribe()
	if f.ResourceSubscriptions != nil {
		acked["resourceSubscriptions"] = uris
	}
	if f.PromptsListChanged || f.ResourcesListChanged {
		acked["promptsListChanged"], acked["resourcesListChanged"] = lists && f.PromptsListChanged, lists && f.ResourcesListChanged
	}
	ack := notification{JSONRPC: mcp.JSONRPC_VERSION, Method: methodSubscriptionsAcked,
		Params: map[string]any{"notifications": acked, "_meta": subMeta}}
	end := newResponse(c.msg.ID, c.s.modernResult(map[string]any{"_meta": subMeta}), nil)
	c.answered = true
	_ = http.NewResponseController(c.w).SetWriteDeadline(time.Time{}) // a stream outlives write_timeout_seconds
	out := newSSEWriter(c.w)
	out.start()
	if out.event("", ack) != nil {
		return nil, nil
	}
	if len(honored) > 0 || notes != nil {
		c.s.followTasks(ctx, c, honored, notes, subMeta, out)
	}
	_ = out.event("", end)
	return nil, nil
}

// followTasks sends notifications/tasks for the tasks ids (of the call's
// thread) as their rows change, and the resource updates of notes as they
// come, until all tasks ended (with no notes), ctx ends or the server
// stops.
func (s *Server) followTasks(ctx context.Context, c *call, ids []string, notes <-chan notification, subMeta map[string]any, out *sseWriter) {
	thread := mcpflow.ThreadRef{UserID: c.req.UserID, ThreadID: c.req.ThreadID}
	release := s.watch.hold(thread)
	defer release()
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	recheck := time.NewTicker(taskRecheck)
	defer recheck.Stop()
	sent := map[string]string{} // task id → the version of it last sent
	for len(ids) > 0 || notes != nil {
		changed := s.watch.next(thread)
		live := ids[:0]
		for _, id := range ids {
			t, rerr := c.ownTask(ctx, id)
			if ctx.Err() != nil {
				return
			}
			if rerr != nil {
				continue // gone: nothing more to say about it
			}
			version := string(t.Status) + "@" + t.UpdatedAt.String()
			if sent[id] != version {
				sent[id] = version
				params := s.taskExt(t, true)
				params["_meta"] = subMeta
				if out.event("", notification{JSONRPC: mcp.JSONRPC_VERSION, Method: methodTaskNotification, Params: params}) != nil {
					return
				}
			}
			if !t.Status.IsTerminal() {
				live = append(live, id)
			}
		}
		ids = live
		if len(ids) == 0 && notes == nil {
			return
		}
		select {
		case n := <-notes:
			if out.event("", n) != nil {
				return
			}
		case <-changed:
		case <-recheck.C:
		case <-keep.C:
			out.comment()
		case <-ctx.Done():
			return
		case <-s.stopping:
			return
		}
	}
}

// subscribeResources subscribes, for a subscriptions/listen stream, to
// the resources f names at their servers, and to their servers' list
// changes when f asks: the notifications come on notes (with the
// subscription's _meta; nil when nothing was honored), uris are the
// resources honored (unknown ones are left out), and unsubscribe ends it
// all; lists reports whether the list changes are watched.
func (c *call) subscribeResources(ctx context.Context, f listenFilter, subMeta map[string]any) (<-chan notification, []string, bool, func()) {
	honored := []string{}
	sr := c.s.surface()
	if sr == nil || len(f.ResourceSubscriptions) == 0 && !f.PromptsListChanged && !f.ResourcesListChanged {
		return nil, honored, false, func() {}
	}
	notes := make(chan notification, streamNotes)
	var ends []func()
	lists := false
	if f.PromptsListChanged || f.ResourcesListChanged {
		stop, err := sr.WatchLists(ctx, c.req.UserID, c.req.ThreadID, func(method string) {
			if method == mcp.MethodNotificationPromptsListChanged && !f.PromptsListChanged ||
				method == mcp.MethodNotificationResourcesListChanged && !f.ResourcesListChanged {
				return
			}
			select {
			case notes <- notification{JSONRPC: mcp.JSONRPC_VERSION, Method: method, Params: map[string]any{"_meta": subMeta}}:
			default:
			}
		})
		if err == nil {
			ends, lists = append(ends, stop), true
		}
	}
	for _, uri := range f.ResourceSubscriptions {
		if slices.Contains(honored, uri) {
			continue
		}
		n := notification{JSONRPC: mcp.JSONRPC_VERSION, Method: mcp.MethodNotificationResourceUpdated,
			Params: map[string]any{"uri": uri, "_meta": subMeta}}
		end, err := sr.SubscribeResource(ctx, c.req.UserID, c.req.ThreadID, uri, func() {
			select {
			case notes <- n:
			default: // a slow reader misses an update: it reads the resource again anyway
			}
		})
		if err != nil {
			continue
		}
		honored = append(honored, uri)
		ends = append(ends, end)
	}
	if len(ends) == 0 {
		return nil, honored, false, func() {}
	}
	return notes, honored, lists, func() {
		for _, end := range ends {
			go end()
		}
	}
}
