package session

import (
	"context"
	"encoding/json"
	"fmt"
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
		return nil, s.classify(ctx, opCtx, sessRequest{what: fmt.Sprintf("MCP %s of server '%s'", method, s.server),
			notFound: fmt.Sprintf("MCP server '%s' does not answer %s", s.server, method)}, err)
	}
	if rpc != nil {
		return nil, &mcpflow.RPCError{Code: rpc.Code, Message: rpc.Message, Data: NonEmptyJSON(rpc.Data)}
	}
	return raw, nil
}

// OffersSubscriptions reports whether the server declared
// resources.subscribe.
func (s *Session) OffersSubscriptions() bool {
	return s.caps.Resources != nil && s.caps.Resources.Subscribe
}

// resourceSubs are a session's subscriptions to its server's resources:
// URI → the callers' callbacks (by a key of their own).
type resourceSubs struct {
	mu    sync.Mutex
	byURI map[string]map[*func()]bool
}

// Subscribe asks the server for updates of uri (resources/subscribe, sent
// once per URI however many callers subscribe) and calls updated at each
// notifications/resources/updated of it, until unsubscribe, which sends
// resources/unsubscribe after the last. A subscription lasts as long as
// this session.
func (s *Session) Subscribe(ctx context.Context, uri string, updated func()) (unsubscribe func(), err error) {
	s.subs.mu.Lock()
	first := len(s.subs.byURI[uri]) == 0
	s.subs.mu.Unlock()
	if first {
		if _, err := s.Request(ctx, mcp.MethodResourcesSubscribe, uri, map[string]any{"uri": uri}); err != nil {
			return nil, err
		}
		if l, ok := s.client.GetTransport().(interface{ Listen() }); ok {
			l.Listen() // an HTTP server's updates come on the session's GET stream
		}
	}
	key := &updated
	s.subs.mu.Lock()
	if s.subs.byURI == nil {
		s.subs.byURI = map[string]map[*func()]bool{}
	}
	if s.subs.byURI[uri] == nil {
		s.subs.byURI[uri] = map[*func()]bool{}
	}
	s.subs.byURI[uri][key] = true
	s.subs.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.subs.mu.Lock()
			delete(s.subs.byURI[uri], key)
			last := len(s.subs.byURI[uri]) == 0
			if last {
				delete(s.subs.byURI, uri)
			}
			s.subs.mu.Unlock()
			if last {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _ = s.Request(ctx, mcp.MethodResourcesUnsubscribe, uri, map[string]any{"uri": uri})
			}
		})
	}, nil
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
