package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Offers reports whether the server declared prompts and resources in its
// capabilities.
func (s *Session) Offers() (prompts, resources bool) {
	return s.caps.Prompts != nil, s.caps.Resources != nil
}

// OffersCompletions reports whether the server declared completions.
func (s *Session) OffersCompletions() bool { return s.caps.Completions != nil }

// Request sends one request of the MCP surface beyond tools (prompts,
// resources) with params and returns its result as the server wrote it.
// name is what the request names (a prompt's name, a resource's URI; the
// Mcp-Name header of 2026-07-28). An error the server answers is an
// *mcpflow.RPCError with its code, message and data, for the caller to
// hear as the server said it; a lost transport or a timeout is classified
// as for tools.
func (s *Session) Request(ctx context.Context, method mcp.MCPMethod, name string, params any) (json.RawMessage, error) {
	opCtx := ctx
	if s.callTimeout > 0 {
		var cancel context.CancelFunc
		opCtx, cancel = context.WithTimeout(ctx, s.callTimeout)
		defer cancel()
	}
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return nil, err
	}
	raw, rpc, err := s.rawRequest(opCtx, method, name, params)
	if err != nil {
		return nil, s.classify(ctx, opCtx, sessRequest{desc: fmt.Sprintf("MCP %s of server '%s'", method, s.server),
			missing: fmt.Sprintf("MCP server '%s' does not answer %s", s.server, method)}, err)
	}
	if rpc != nil {
		return nil, &mcpflow.RPCError{Code: rpc.Code, Message: rpc.Message, Data: NonEmptyJSON(rpc.Data)}
	}
	return raw, nil
}

// OffersSubscriptions reports whether the server offers resource
// subscriptions: resources.subscribe before 2026-07-28; from then on the
// resources capability, subscriptions being part of subscriptions/listen.
func (s *Session) OffersSubscriptions() bool {
	return s.caps.Resources != nil && (s.caps.Resources.Subscribe || s.Modern())
}

// resourceSubs are a session's subscriptions to its server's resources:
// URI → the callers' callbacks (by a key of their own), and on 2026-07-28
// the subscriptions/listen stream that asks for them.
type resourceSubs struct {
	// req serializes the upstream requests that start and end a URI's
	// subscription, so that a last unsubscribe and a first subscribe of
	// the same URI reach the server in order.
	req   sync.Mutex
	mu    sync.Mutex
	byURI map[string]map[*func()]bool
	lists bool // HearLists was called: the stream asks for list changes
	// wake asks the session's listener (listenLoop, 2026-07-28) for a
	// stream with the filter wanted now; nil until the first stream.
	wake chan struct{}
	// acked is closed when the server acknowledges the latest stream
	// (notifications/subscriptions/acknowledged); nil when none is awaited.
	acked chan struct{}
}

// subsAckWait bounds how long a first subscription waits for the server to
// acknowledge the stream that asks for it.
const subsAckWait = 5 * time.Second

// acknowledged closes the channel of the stream the server acknowledged.
func (s *Session) acknowledged() {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.acked != nil {
		close(s.subs.acked)
		s.subs.acked = nil
	}
}

// Subscribe asks the server for updates of uri and calls updated at each
// notifications/resources/updated of it, until unsubscribe. Before
// 2026-07-28 that is resources/subscribe, sent once per URI however many
// callers subscribe (resources/unsubscribe after the last), with the
// session's GET stream open for the updates; from 2026-07-28 on, one
// subscriptions/listen stream naming every subscribed URI, reopened as
// they change, after a resources/read that the resource exists. The
// callback is registered before the server is asked, so no update sent
// meanwhile is lost. A subscription lasts as long as this session.
func (s *Session) Subscribe(ctx context.Context, uri string, updated func()) (unsubscribe func(), err error) {
	s.subs.req.Lock()
	defer s.subs.req.Unlock()
	key := &updated
	s.subs.mu.Lock()
	first := len(s.subs.byURI[uri]) == 0
	if s.subs.byURI == nil {
		s.subs.byURI = map[string]map[*func()]bool{}
	}
	if first {
		s.subs.byURI[uri] = map[*func()]bool{}
	}
	s.subs.byURI[uri][key] = true
	s.subs.mu.Unlock()
	if first {
		method := mcp.MethodResourcesSubscribe
		if s.Modern() {
			method = mcp.MethodResourcesRead // the stream below subscribes
		}
		if _, err := s.Request(ctx, method, uri, map[string]any{"uri": uri}); err != nil {
			s.subs.mu.Lock()
			delete(s.subs.byURI, uri)
			s.subs.mu.Unlock()
			return nil, err
		}
		if s.Modern() {
			// Once the server acknowledged the stream, the subscription
			// is the caller's: an update sent after Subscribe returns is
			// not lost to a stream still opening.
			s.subs.mu.Lock()
			s.relistenLocked()
			acked := s.subs.acked
			s.subs.mu.Unlock()
			if acked != nil {
				t := time.NewTimer(subsAckWait)
				select {
				case <-acked:
				case <-t.C:
					s.log.Warn("MCP server did not acknowledge the subscriptions/listen stream of resource subscriptions in time", "server", s.server, "wait", subsAckWait)
				case <-ctx.Done():
				}
				t.Stop()
			}
		} else if l, ok := s.client.GetTransport().(interface{ Listen() }); ok {
			l.Listen() // an HTTP server's updates come on the session's GET stream
		}
	}
	var once sync.Once
	return func() { once.Do(func() { s.unsubscribe(uri, key) }) }, nil
}

// unsubscribe ends one caller's subscription to uri; the last one's ends
// it at the server.
func (s *Session) unsubscribe(uri string, key *func()) {
	s.subs.req.Lock()
	defer s.subs.req.Unlock()
	s.subs.mu.Lock()
	delete(s.subs.byURI[uri], key)
	last := len(s.subs.byURI[uri]) == 0
	if last {
		delete(s.subs.byURI, uri)
		if s.Modern() {
			s.relistenLocked()
		}
	}
	s.subs.mu.Unlock()
	if last && !s.Modern() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = s.Request(ctx, mcp.MethodResourcesUnsubscribe, uri, map[string]any{"uri": uri})
	}
}

// relistenLocked asks for the subscriptions/listen stream to name the
// URIs subscribed now and, after HearLists, the list changes (nothing: no
// stream). s.subs.mu is held, so the stream is replaced by the session's
// listener, not here: stopping a stream waits for its reader, which may be
// delivering an update that needs s.subs.mu. An ack still awaited (a first
// Subscribe's, when HearLists asks again meanwhile) is awaited from the new
// stream: the acknowledgement names no stream mcp-go lets us tell apart,
// and the new one asks for every URI the old one did.
func (s *Session) relistenLocked() {
	if len(s.subs.byURI) == 0 && !s.subs.lists {
		if s.subs.acked != nil { // no stream is coming to acknowledge it
			close(s.subs.acked)
			s.subs.acked = nil
		}
		if s.subs.wake == nil {
			return
		}
	} else if s.subs.acked == nil {
		s.subs.acked = make(chan struct{})
	}
	if s.subs.wake == nil {
		s.subs.wake = make(chan struct{}, 1)
		go s.listenLoop(s.subs.wake)
	}
	select {
	case s.subs.wake <- struct{}{}:
	default: // a wake is pending: the listener reads the filter then
	}
}

// listenLoop keeps the session's one subscriptions/listen stream asking
// for what relistenLocked asked for last, until the session ends. Each
// stream ends (its Listen returned) before the next starts: mcp-go's Listen
// cancels the stream of a Listen that registered before it, so two that
// overlap can leave none open.
func (s *Session) listenLoop(wake <-chan struct{}) {
	var stop func() // ends the open stream, once its Listen returned
	end := func() {
		if stop != nil {
			stop()
			stop = nil
		}
	}
	defer end()
	for {
		select {
		case <-wake:
		case <-s.done:
			return
		}
		end()
		s.subs.mu.Lock()
		filter := mcp.SubscriptionFilter{ResourceSubscriptions: slices.Sorted(maps.Keys(s.subs.byURI))}
		if s.subs.lists {
			filter.PromptsListChanged, filter.ResourcesListChanged = s.Offers()
		}
		want := len(s.subs.byURI) > 0 || s.subs.lists
		s.subs.mu.Unlock()
		if want {
			stop = s.listen(filter)
		}
	}
}

// listen opens a subscriptions/listen stream with filter and returns what
// ends it and waits for its Listen to return.
func (s *Session) listen(filter mcp.SubscriptionFilter) func() {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		if err := s.client.Listen(ctx, filter); err != nil && ctx.Err() == nil {
			s.log.Warn("MCP server ended the subscriptions/listen stream of resource subscriptions", "server", s.server, "error", err)
			s.acknowledged() // no ack is coming from this stream: a Subscribe waiting goes on
		}
	}()
	return func() {
		cancel()
		<-ended
	}
}

// HearLists makes the server's notifications/prompts/list_changed and
// resources/list_changed reach DialOptions.Lists for the rest of the
// session: a stdio server's come anyway; an HTTP server's need the
// session's GET stream (before 2026-07-28) or a subscriptions/listen
// asking for them, which it opens once.
func (s *Session) HearLists() {
	s.subs.mu.Lock()
	first := !s.subs.lists
	s.subs.lists = true
	if first && s.Modern() {
		s.relistenLocked()
	}
	s.subs.mu.Unlock()
	if first && !s.Modern() {
		if l, ok := s.client.GetTransport().(interface{ Listen() }); ok {
			l.Listen()
		}
	}
}

// listChanged hands a list change to DialOptions.Lists.
func (s *Session) listChanged(method string) {
	if s.onLists != nil {
		s.onLists(method)
	}
}

// resourceUpdated calls the callbacks subscribed to uri.
func (s *Session) resourceUpdated(uri string) {
	s.subs.mu.Lock()
	var fns []func()
	for k := range s.subs.byURI[uri] {
		fns = append(fns, *k)
	}
	s.subs.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
