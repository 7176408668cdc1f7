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
	"golang.org/x/sync/semaphore"

	"github.com/mcpflow/mcpflow"
)

// Offers reports whether the server declared prompts and resources in its
// capabilities.
func (s *Session) Offers() (prompts, resources bool) {
	return s.caps.Prompts != nil, s.caps.Resources != nil
}

// OffersListChanges reports whether the server declared that it tells
// when its list of prompts, or of resources, changes (listChanged).
func (s *Session) OffersListChanges() (prompts, resources bool) {
	return s.caps.Prompts != nil && s.caps.Prompts.ListChanged, s.caps.Resources != nil && s.caps.Resources.ListChanged
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
	// req (a lock a Subscribe can stop waiting for with its ctx)
	// serializes the upstream requests that start and end a URI's
	// subscription, so that a last unsubscribe and a first subscribe of
	// the same URI reach the server in order.
	req   *semaphore.Weighted
	mu    sync.Mutex
	byURI map[string]map[*func()]bool
	lists bool // HearLists was called: the stream asks for list changes
	// wake asks the session's listener (listenLoop, 2026-07-28) for a
	// stream with the filter wanted now; nil until the first stream.
	wake chan struct{}
	// waiting are the URIs whose first Subscribe waits for the server to
	// acknowledge a stream naming them, or to decline or refuse them.
	waiting map[string]*subWait
	// first are the URIs whose first Subscribe has not returned yet (its
	// resources/read, then its wait): a refusal never drops them.
	first map[string]bool
	// unconfirmed are the URIs whose first Subscribe succeeded as its
	// wait ran out (ranOutLocked), named by no acknowledgement since: one
	// that leaves such a URI out drops it.
	unconfirmed map[string]bool
	// named are the URIs the last acknowledged stream named: those the
	// server took together.
	named map[string]bool
	// together are the URIs of the last stream the server refused
	// together (none alone, one of named accepted alone), if the
	// listener's streams asked for them since (refusedTogetherLocked).
	together []string
	stream   *listenStream         // the listener's open stream (the last it opened)
	retrying bool                  // the listener waits to open stream's filter again (its backoff)
	probes   map[string]*probeWait // probeRefused's streams by request id
}

// probeWait is one of probe's streams: the URI it names alone, and
// whether the server's acknowledgement named it (sent once).
type probeWait struct {
	uri   string
	acked chan bool
}

// subWait is the wait of a URI's first Subscribe (awaitStream).
type subWait struct {
	answer chan error // nil: a stream naming the URI was acknowledged; or why not
	// judging: a refused stream naming the URI is looked into (refused);
	// the wait does not run out meanwhile.
	judging bool
	// again: refused in a stream naming it, and accepted alone or not
	// judged, the URI waits for the next stream; the wait running out is
	// not a success.
	again bool
	// judged is when refused last let go of the URI: the wait lasts at
	// least subsAckWait from then, for the listener's next stream.
	judged time.Time
}

// subsAckWait bounds how long a first subscription waits for the server to
// acknowledge the stream that asks for it.
const subsAckWait = 5 * time.Second

// acknowledged takes the server's notifications/subscriptions/acknowledged
// of the open stream (its _meta names the stream's request; an older
// stream's is ignored): the URIs it names (params.notifications.
// resourceSubscriptions) are subscribed, a first Subscribe of one the
// stream asked for and it leaves out fails, and one it leaves out whose
// Subscribe succeeded as its wait ran out, with no acknowledgement naming
// it since, is dropped, with a warning.
func (s *Session) acknowledged(n mcp.JSONRPCNotification) {
	established, _ := n.Params.AdditionalFields["notifications"].(map[string]any)
	uris, _ := established["resourceSubscriptions"].([]any)
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	id, tagged := n.Params.Meta[mcp.MetaKeySubscriptionID]
	named := map[string]bool{}
	for _, u := range uris {
		if uri, ok := u.(string); ok {
			named[uri] = true
		}
	}
	for key, probe := range s.subs.probes {
		// probeRefused's (one at a time: an untagged ack is the probe's,
		// the open stream having been refused)
		if !tagged || fmt.Sprint(id) == key {
			probe.acked <- named[probe.uri]
			delete(s.subs.probes, key)
			return
		}
	}
	st := s.subs.stream
	if st == nil || st.over || tagged && fmt.Sprint(id) != st.key {
		return // (a stream ending answers nothing: its successor will)
	}
	st.acked, st.named, st.ackedAt = true, named, time.Now()
	s.subs.named, s.subs.together = named, nil
	dropped, kept := 0, 0
	for _, uri := range st.filter.ResourceSubscriptions {
		_, waits := s.subs.waiting[uri]
		switch {
		case named[uri]:
			s.releaseLocked(uri, nil)
			delete(s.subs.unconfirmed, uri)
		case waits:
			s.releaseLocked(uri, s.notSubscribed())
		case s.subs.unconfirmed[uri]:
			// Its Subscribe succeeded as its wait ran out, and the
			// server's first word on it is no: it sends it no update,
			// and the next stream leaves it out. (One acknowledged
			// before is left to refused's rules.)
			delete(s.subs.unconfirmed, uri)
			if len(s.subs.byURI[uri]) > 0 {
				delete(s.subs.byURI, uri)
				dropped++
			}
		case len(s.subs.byURI[uri]) > 0:
			kept++
		}
	}
	if dropped > 0 {
		s.log.Warn("MCP server left resource subscriptions out of its acknowledgement; they are dropped", "server", s.server, "resources", dropped)
	}
	if kept > 0 {
		s.log.Warn("MCP server left resource subscriptions it acknowledged before out of its acknowledgement; they are kept, and named again in its next stream", "server", s.server, "resources", kept)
	}
}

// notSubscribed is the error of a URI the server's acknowledgement left
// out.
func (s *Session) notSubscribed() error {
	return mcpflow.Errorf(mcpflow.EUpstream, "MCP server '%s' did not subscribe to the resource", s.server)
}

// releaseLocked ends the wait of uri's first Subscribe with err (nil: a
// stream naming it was acknowledged).
func (s *Session) releaseLocked(uri string, err error) {
	if w, ok := s.subs.waiting[uri]; ok {
		w.answer <- err
		delete(s.subs.waiting, uri)
	}
}

// refused takes the server's refusal of the stream st (ctx is its
// request's, ended when the listener replaced st, even before the refusal
// came: then nothing is asked of the server). A server refuses the whole stream for one URI, so when st
// names more than one, which it refuses is asked of it one URI at a time
// (probeRefused). A URI whose first Subscribe waits fails with the
// server's answer about it alone (the stream's refusal, for a stream
// naming it alone; "did not subscribe" for an acknowledgement leaving it
// out); if no URI is refused alone, the waiting ones fail with an error
// of ours (never another URI's refusal); one the server did not answer
// about while refusing another fails with an error of ours; one accepted
// alone after a refusal of another keeps waiting for the stream the
// listener asks for again, at least subsAckWait from
// the verdict, and fails if its wait runs out first, as does one left
// waiting when the stream is replaced before the verdict. A URI
// subscribed before (not one whose first Subscribe is still under way) is
// dropped, with a warning, only when refused alone twice while another
// was accepted alone, or when the server refused the URIs together twice
// in a row, refusing none alone, and its last acknowledged stream named
// some of them, one accepted alone, but not this one
// (refusedTogetherLocked): a refusal of every
// stream (a server out of room, or one refusing the lone URI's again)
// says nothing about the URI, and the listener asks again later (its
// backoff). The stream is then asked for without the URIs failed or
// dropped.
func (s *Session) refused(ctx context.Context, st *listenStream, rpc *mcpflow.RPCError) {
	uris := st.filter.ResourceSubscriptions
	var judged []*subWait
	s.subs.mu.Lock()
	for _, uri := range uris {
		if w, ok := s.subs.waiting[uri]; ok {
			w.judging = true
			judged = append(judged, w)
		}
	}
	s.subs.mu.Unlock()
	alone, accepted, twice, once := map[string]error{}, map[string]bool{}, map[string]bool{}, false
	if len(uris) == 1 {
		alone[uris[0]], once = rpc, true
	} else if len(uris) > 1 && ctx.Err() == nil {
		alone, accepted, twice, once = s.probeRefused(ctx, uris)
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	now := time.Now()
	for _, w := range judged {
		w.judging, w.judged = false, now
	}
	if s.subs.stream != st || ctx.Err() != nil {
		// Replaced meanwhile: the next stream's answer counts, and a
		// URI waiting now, refused in a stream naming it, fails if its
		// wait runs out before one naming it is acknowledged.
		for _, uri := range uris {
			if w, ok := s.subs.waiting[uri]; ok {
				w.again = true
			}
		}
		return
	}
	// A waiting URI's answer (kept for one whose Subscribe comes during
	// the listener's backoff: ranOutLocked): its refusal alone; when none
	// was refused alone, for one accepted alone, an error of ours (the
	// stream's refusal may name another URI, and a -32602 would read as
	// this one not found).
	st.verdict = alone
	for _, uri := range uris {
		if !once && accepted[uri] {
			st.verdict[uri] = mcpflow.Errorf(mcpflow.EUpstream, "MCP server '%s' refused the subscriptions/listen stream naming the resource with others, though it accepts the resource alone: try again later", s.server)
		}
	}
	together := s.refusedTogetherLocked(uris, once, accepted)
	var dropped, failed int
	for _, uri := range uris {
		w, waits := s.subs.waiting[uri]
		var err error
		switch {
		case waits && st.verdict[uri] != nil:
			err = st.verdict[uri]
		case waits && !accepted[uri]:
			err = mcpflow.Errorf(mcpflow.EUpstream, "MCP server '%s' did not answer a subscription to the resource in time", s.server)
		case waits:
			w.again = true
		case !waits && !s.subs.first[uri] && (twice[uri] || together && !s.subs.named[uri]) && len(s.subs.byURI[uri]) > 0:
			delete(s.subs.byURI, uri)
			dropped++
		}
		if err != nil {
			// Its Subscribe fails (it may still be reading): the
			// stream is asked for without it now.
			s.releaseLocked(uri, err)
			delete(s.subs.byURI, uri)
			failed++
		}
	}
	if dropped > 0 {
		s.log.Warn("MCP server refused resource subscriptions; they are dropped", "server", s.server, "resources", dropped, "error", rpc.Message)
	}
	if dropped+failed > 0 {
		s.relistenLocked()
	}
}

// refusedTogetherLocked reports whether the server refused the stream of
// uris twice in a row (once may be a passing failure; a refusal that does
// not count, or listen opening a stream of other URIs, forgets the first),
// refusing none of them
// alone, while its last acknowledged stream named some of them and it
// accepted one of those alone: the others are dropped then (their
// Subscribe returned before the refusal came), for those it took to have a
// stream again. A probe left unanswered does not count against this (a URI
// whose server is slow is often the one that made the refusal late); a
// server that accepts none alone may be out of room, and nothing is
// dropped. It records uris as the last refused together.
func (s *Session) refusedTogetherLocked(uris []string, once bool, accepted map[string]bool) bool {
	kept, other := false, false // one named and accepted alone; one not named
	for _, u := range uris {
		if s.subs.named[u] {
			kept = kept || accepted[u]
		} else {
			other = true
		}
	}
	if once || !kept || !other {
		s.subs.together = nil // (none accepted: the server may be out of room)
		return false
	}
	again := slices.Equal(s.subs.together, uris)
	s.subs.together = uris
	return again
}

// probeRefusedWait bounds all of probeRefused's streams together.
const probeRefusedWait = 3 * subsAckWait

// probeRefused asks the server about each of uris in a stream naming that
// URI alone, one stream at a time, each ended before the next: it returns
// the URIs refused (or left out of the stream's acknowledgement), with
// the server's answer about each, and those accepted (acknowledged), and
// whether any was refused. A stream with no answer within subsAckWait
// (all of them within probeRefusedWait) counts as neither. When some were
// accepted, the refused ones are asked again, each listenRetryMin after
// the last probe (a server that frees a stream's room, as mcpflow's
// per-user stream slots, only once it noticed the stream end refuses the
// probe after it): twice are those refused again.
func (s *Session) probeRefused(ctx context.Context, uris []string) (refused map[string]error, accepted, twice map[string]bool, once bool) {
	ctx, cancel := context.WithTimeout(ctx, probeRefusedWait)
	defer cancel()
	refused, accepted, twice = map[string]error{}, map[string]bool{}, map[string]bool{}
	for _, uri := range uris {
		if ctx.Err() != nil {
			return refused, accepted, twice, len(refused) > 0
		}
		if ok, err := s.probe(ctx, uri); ok {
			accepted[uri] = true
		} else if err != nil {
			refused[uri] = err
		}
	}
	once = len(refused) > 0
	if len(accepted) == 0 {
		return refused, accepted, twice, once
	}
	for _, uri := range slices.Sorted(maps.Keys(refused)) {
		select {
		case <-time.After(listenRetryMin):
		case <-ctx.Done():
			return refused, accepted, twice, once
		}
		switch ok, err := s.probe(ctx, uri); {
		case ok:
			accepted[uri] = true
			delete(refused, uri)
		case err != nil:
			refused[uri], twice[uri] = err, true
		}
	}
	return refused, accepted, twice, once
}

// probe opens a stream naming uri alone and ends it at its answer: true
// when the server acknowledged it naming uri; the server's refusal when
// it refused it, or notSubscribed when its acknowledgement left uri out;
// or neither within subsAckWait.
func (s *Session) probe(ctx context.Context, uri string) (bool, error) {
	key := sessRequestKey()
	pw := &probeWait{uri: uri, acked: make(chan bool, 1)}
	s.subs.mu.Lock()
	if s.subs.probes == nil {
		s.subs.probes = map[string]*probeWait{}
	}
	s.subs.probes[key] = pw
	s.subs.mu.Unlock()
	defer func() {
		s.subs.mu.Lock()
		delete(s.subs.probes, key)
		s.subs.mu.Unlock()
	}()
	pctx, cancel := context.WithTimeout(ctx, subsAckWait)
	defer cancel()
	answered := make(chan *mcp.JSONRPCErrorDetails, 1)
	go func() {
		_, rpc, _ := s.listenRequest(pctx, key, mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}})
		answered <- rpc
	}()
	acked := func(named bool) (bool, error) {
		if named {
			return true, nil
		}
		return false, s.notSubscribed()
	}
	select {
	case rpc := <-answered:
		if rpc != nil {
			return false, &mcpflow.RPCError{Code: rpc.Code, Message: rpc.Message, Data: NonEmptyJSON(rpc.Data)}
		}
		select {
		case named := <-pw.acked: // acknowledged, then ended at once
			return acked(named)
		default:
			return false, nil
		}
	case named := <-pw.acked:
		cancel()
		<-answered // gone before the next one opens
		return acked(named)
	case <-pctx.Done():
		<-answered
		return false, nil
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
	if err := s.subs.req.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer s.subs.req.Release(1)
	key := &updated
	s.subs.mu.Lock()
	first := len(s.subs.byURI[uri]) == 0
	if s.subs.byURI == nil {
		s.subs.byURI = map[string]map[*func()]bool{}
	}
	if first {
		s.subs.byURI[uri] = map[*func()]bool{}
		if s.subs.first == nil {
			s.subs.first = map[string]bool{}
		}
		s.subs.first[uri] = true
		delete(s.subs.unconfirmed, uri) // (an earlier subscription's)
		defer func() {
			s.subs.mu.Lock()
			delete(s.subs.first, uri)
			s.subs.mu.Unlock()
		}()
	}
	s.subs.byURI[uri][key] = true
	var w *subWait
	if first && s.Modern() {
		w = s.waitLocked(uri)
	}
	s.subs.mu.Unlock()
	if first {
		method := mcp.MethodResourcesSubscribe
		if s.Modern() {
			method = mcp.MethodResourcesRead // the stream below subscribes
		}
		if _, err := s.Request(ctx, method, uri, map[string]any{"uri": uri}); err != nil {
			s.subs.mu.Lock()
			if w != nil {
				s.endWaitLocked(uri, w, err) // a stream opened meanwhile may name it
			} else {
				delete(s.subs.byURI, uri)
			}
			s.subs.mu.Unlock()
			return nil, err
		}
		if s.Modern() {
			// Once the server acknowledged a stream naming uri, the
			// subscription is the caller's: an update sent after
			// Subscribe returns is not lost to a stream still opening.
			if err := s.awaitStream(ctx, uri, w); err != nil {
				return nil, err
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
	_ = s.subs.req.Acquire(context.Background(), 1)
	defer s.subs.req.Release(1)
	s.subs.mu.Lock()
	delete(s.subs.byURI[uri], key)
	last := len(s.subs.byURI[uri]) == 0
	if last {
		delete(s.subs.byURI, uri)
		delete(s.subs.unconfirmed, uri)
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

// waitLocked starts the wait of uri's first Subscribe (s.subs.mu held),
// before its resources/read: a stream opened meanwhile names uri, and the
// server's answer to it counts.
func (s *Session) waitLocked(uri string) *subWait {
	w := &subWait{answer: make(chan error, 1)}
	if s.subs.waiting == nil {
		s.subs.waiting = map[string]*subWait{}
	}
	s.subs.waiting[uri] = w
	return w
}

// awaitStream asks for a stream naming uri (already in s.subs.byURI, w
// its wait), unless the server answered about one already or the open
// stream asks for that (relistenLocked), and waits, at most subsAckWait (longer while the
// server's refusal of one is looked into: refused), for the server to
// acknowledge one. When the server leaves uri out or refuses the stream,
// when ctx ends or the session does, uri is unsubscribed and the error
// returned (the other URIs get a stream without it).
func (s *Session) awaitStream(ctx context.Context, uri string, w *subWait) error {
	s.subs.mu.Lock()
	if s.subs.waiting[uri] == w { // not answered yet
		if st := s.subs.stream; st != nil && st.acked && st.named[uri] && !st.over {
			// The open stream names it and was acknowledged so (an
			// unsubscribe undone before the listener replaced it).
			s.releaseLocked(uri, nil)
		} else {
			s.relistenLocked()
		}
	}
	s.subs.mu.Unlock()
	began := time.Now()
	t := time.NewTimer(subsAckWait)
	defer t.Stop()
	var err error
	ranOut := false
wait:
	select {
	case err = <-w.answer:
	case <-t.C:
		s.subs.mu.Lock()
		judging, left := w.judging, subsAckWait-time.Since(w.judged)
		between := s.betweenStreamsLocked()
		s.subs.mu.Unlock()
		if judging || between && time.Since(began) < subsWaitMax {
			// The server refused the stream naming uri: wait for the
			// verdict; or it refused or ended the last stream, and
			// the listener has not settled on what follows yet.
			t.Reset(subsAckWait)
			goto wait
		}
		if left > 0 { // for the listener's stream after the verdict
			t.Reset(left)
			goto wait
		}
		ranOut = true
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.done:
		err = mcpflow.Errorf(mcpflow.EUpstream, "MCP session of server '%s' ended", s.server)
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	switch {
	case s.subs.waiting[uri] != w:
		select {
		case err = <-w.answer: // answered as the wait ran out: the answer counts
		default:
		}
	case ranOut && w.again:
		err = mcpflow.Errorf(mcpflow.EUpstream, "MCP server '%s' refused the subscriptions/listen stream naming the resource and acknowledged none since", s.server)
	case ranOut:
		err = s.ranOutLocked(uri)
	}
	s.endWaitLocked(uri, w, err)
	return err
}

// subsWaitMax bounds a first Subscribe's wait while the listener is
// between two streams (betweenStreamsLocked): the refusal's verdict
// (probeRefusedWait) and the next stream's acknowledgement.
const subsWaitMax = 2*subsAckWait + probeRefusedWait

// betweenStreamsLocked reports whether the server refused or ended the
// listener's last stream and the listener has not settled on what follows
// it (s.subs.mu held): refused has not reached its verdict, or the
// listener has not started its backoff yet.
func (s *Session) betweenStreamsLocked() bool {
	st := s.subs.stream
	return st != nil && st.over && !st.stopped && !s.subs.retrying
}

// ranOutLocked is the answer to a first Subscribe of uri whose wait ran
// out unanswered (s.subs.mu held): success, with a warning, while the
// listener's stream naming uri is open (the server is slow to acknowledge
// it) or the listener is replacing its stream with one naming uri;
// otherwise (the server refused or ended the last stream, and the
// listener waits out its backoff) an error: the server's answer about uri
// if refused gave one, else ours.
func (s *Session) ranOutLocked(uri string) error {
	st := s.subs.stream
	open := st != nil && !st.over && slices.Contains(st.filter.ResourceSubscriptions, uri)
	if open || st != nil && st.stopped { // (the listener stops only an open stream: never in its backoff)
		s.log.Warn("MCP server did not acknowledge the subscriptions/listen stream of resource subscriptions in time", "server", s.server, "wait", subsAckWait)
		if s.subs.unconfirmed == nil {
			s.subs.unconfirmed = map[string]bool{}
		}
		s.subs.unconfirmed[uri] = true
		return nil
	}
	if st != nil && st.verdict[uri] != nil {
		return st.verdict[uri]
	}
	return mcpflow.Errorf(mcpflow.EUpstream, "MCP server '%s' refused or ended the subscriptions/listen stream naming the resource, and mcpflow asks for it again later: try again shortly", s.server)
}

// endWaitLocked ends uri's wait w; a failed one unsubscribes uri (the
// other URIs get a stream without it).
func (s *Session) endWaitLocked(uri string, w *subWait, err error) {
	if s.subs.waiting[uri] == w {
		delete(s.subs.waiting, uri)
	}
	if err != nil {
		delete(s.subs.byURI, uri)
		s.relistenLocked()
	}
}

// relistenLocked asks for the subscriptions/listen stream to name the
// URIs subscribed now and, after HearLists, the list changes (nothing: no
// stream), unless the open stream asks for just that, or the listener's
// retry of it will. s.subs.mu is held, so the stream is replaced by the session's
// listener, not here: stopping a stream waits for its reader, which may be
// delivering an update that needs s.subs.mu.
func (s *Session) relistenLocked() {
	if st := s.subs.stream; st != nil && (s.subs.retrying || !isClosed(st.ended)) {
		if s.standsLocked(st) {
			return // the open stream asks for that already, or its retry will
		}
	}
	if s.subs.wake == nil {
		if len(s.subs.byURI) == 0 && !s.subs.lists {
			return
		}
		s.subs.wake = make(chan struct{}, 1)
		go s.listenLoop(s.subs.wake)
	}
	select {
	case s.subs.wake <- struct{}{}:
	default: // a wake is pending: the listener reads the filter then
	}
}

// Reopening a stream the server ended or refused waits listenRetryMin,
// doubling up to listenRetryMax (and back to the start after a stream the
// server acknowledged stood listenStable, or when the filter changes: a
// wake during the wait that asks for the same filter leaves it as it is).
const (
	listenRetryMin = time.Second
	listenRetryMax = time.Minute
	// listenStable is how long an acknowledged stream stands after its
	// acknowledgement before its end puts the backoff back to the start
	// (a server that acknowledges and ends each stream at once is asked
	// less and less often).
	listenStable = 10 * time.Second
)

// listenLoop keeps the session's one subscriptions/listen stream asking
// for what relistenLocked asked for last, until the session ends, and
// opens it again when the server ends it (a restart, a proxy's idle
// timeout). Each stream ends (its Listen returned) before the next
// starts: mcp-go's Listen cancels the stream of a Listen that registered
// before it, so two that overlap can leave none open.
func (s *Session) listenLoop(wake <-chan struct{}) {
	var cur *listenStream
	defer func() {
		if cur != nil {
			cur.stop()
		}
	}()
	var retry <-chan time.Time
	var last *mcp.SubscriptionFilter // of the last stream opened
	backoff := listenRetryMin
	endedNow := func() { // the server ended or refused cur: wait, then ask again
		s.subs.mu.Lock()
		if cur.acked && time.Since(cur.ackedAt) >= listenStable {
			backoff = listenRetryMin
		}
		s.subs.retrying = true
		s.subs.mu.Unlock()
		cur, retry = nil, time.After(backoff)
		backoff = min(2*backoff, listenRetryMax)
	}
	for {
		var ended <-chan struct{}
		if cur != nil {
			ended = cur.ended
		}
		select {
		case <-wake:
			if cur != nil && isClosed(cur.ended) {
				endedNow() // (as it ended: the wake waits its turn)
			}
			if (cur != nil || retry != nil) && last != nil && s.stands(*last, cur) {
				continue // nothing new to ask for: the stream, or its backoff, stands
			}
			backoff = listenRetryMin // a new filter, not refused yet
		case <-retry:
		case <-ended:
			endedNow()
			continue
		case <-s.done:
			return
		}
		retry = nil
		if cur != nil {
			cur.stop()
			cur = nil
		}
		s.subs.mu.Lock()
		filter, want := s.filterLocked()
		s.subs.retrying = false
		s.subs.mu.Unlock()
		if last != nil && !sameFilter(*last, filter) {
			backoff = listenRetryMin // a new filter, opened by a retry
		}
		if want {
			cur, last = s.listen(filter), &filter
		}
	}
}

// isClosed reports whether ch is closed (it is never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stands reports whether the filter wanted now is f and the listener's
// open stream cur, if any, can answer every waiting first Subscribe
// (answersLocked).
func (s *Session) stands(f mcp.SubscriptionFilter, cur *listenStream) bool {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	want, _ := s.filterLocked()
	return sameFilter(f, want) && (cur == nil || s.answersLocked(cur))
}

// standsLocked reports whether the stream st (open, or refused with its
// retry pending) asks for what is wanted now and can answer every waiting
// first Subscribe: s.subs.mu held.
func (s *Session) standsLocked(st *listenStream) bool {
	f, _ := s.filterLocked()
	return sameFilter(st.filter, f) && s.answersLocked(st)
}

// answersLocked reports whether st can answer every waiting first
// Subscribe: it has not been acknowledged yet, or has ended (its
// successor will be), or its acknowledgement named each. An open stream
// acknowledged without a URI that is wanted again says nothing more of
// it: the listener opens a new one.
func (s *Session) answersLocked(st *listenStream) bool {
	if !st.acked || isClosed(st.ended) {
		return true
	}
	for uri := range s.subs.waiting {
		if !st.named[uri] {
			return false
		}
	}
	return true
}

// filterLocked is the filter the session's stream asks for now, and
// whether it asks for anything.
func (s *Session) filterLocked() (mcp.SubscriptionFilter, bool) {
	filter := mcp.SubscriptionFilter{ResourceSubscriptions: slices.Sorted(maps.Keys(s.subs.byURI))}
	if s.subs.lists {
		filter.PromptsListChanged, filter.ResourcesListChanged = s.OffersListChanges()
	}
	return filter, len(s.subs.byURI) > 0 || filter.PromptsListChanged || filter.ResourcesListChanged
}

func sameFilter(a, b mcp.SubscriptionFilter) bool {
	return a.PromptsListChanged == b.PromptsListChanged && a.ResourcesListChanged == b.ResourcesListChanged &&
		a.ToolsListChanged == b.ToolsListChanged && slices.Equal(a.ResourceSubscriptions, b.ResourceSubscriptions)
}

// listenStream is one subscriptions/listen stream of listenLoop's.
type listenStream struct {
	key     string // its request id
	filter  mcp.SubscriptionFilter
	acked   bool            // the server acknowledged it (under s.subs.mu)
	named   map[string]bool // the URIs its acknowledgement named (under s.subs.mu)
	ackedAt time.Time       // (under s.subs.mu)
	// over: its request returned, or the listener is ending it (under
	// s.subs.mu); ended closes later, after refused.
	over    bool
	stopped bool // the listener ends it (stop), to open the next or as the session ends (under s.subs.mu)
	// verdict: the error refused gave (or would give) a waiting URI
	// after the server refused it (under s.subs.mu).
	verdict map[string]error
	ended   chan struct{} // closed when its request returned
	stop    func()        // ends it and waits for that
}

// listen opens a subscriptions/listen stream with filter, sent as the
// session's own request (rawRequest: the server's refusal as it answered,
// the request's id to tell its acknowledgement from an older stream's, a
// stdio server told when it ends).
func (s *Session) listen(filter mcp.SubscriptionFilter) *listenStream {
	ctx, cancel := context.WithCancel(context.Background())
	st := &listenStream{key: sessRequestKey(), filter: filter, ended: make(chan struct{})}
	st.stop = func() {
		s.subs.mu.Lock()
		st.over, st.stopped = true, true
		s.subs.mu.Unlock()
		cancel()
		<-st.ended
	}
	s.subs.mu.Lock()
	s.subs.stream = st
	if !slices.Equal(s.subs.together, filter.ResourceSubscriptions) {
		s.subs.together = nil // twice together is twice in a row
	}
	s.subs.mu.Unlock()
	go func() {
		defer close(st.ended)
		_, rpc, err := s.listenRequest(ctx, st.key, filter)
		s.subs.mu.Lock()
		st.over = true
		s.subs.mu.Unlock()
		switch {
		case rpc != nil: // (also as the listener ended it: a waiting URI is told)
			s.log.Warn("MCP server refused the subscriptions/listen stream", "server", s.server, "code", rpc.Code, "error", rpc.Message)
			s.refused(ctx, st, &mcpflow.RPCError{Code: rpc.Code, Message: rpc.Message, Data: NonEmptyJSON(rpc.Data)})
		case ctx.Err() != nil: // ended by the listener
		case err != nil:
			s.log.Warn("MCP subscriptions/listen stream lost; opening it again", "server", s.server, "error", err)
		default:
			s.log.Debug("MCP server ended the subscriptions/listen stream; opening it again", "server", s.server)
		}
	}()
	return st
}

// listenRequest sends subscriptions/listen with filter under request id
// key; it returns when the stream ends, ctx does, or the server refuses it.
func (s *Session) listenRequest(ctx context.Context, key string, filter mcp.SubscriptionFilter) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.rawRequestID(ctx, mcp.NewRequestId(key), mcp.MethodSubscriptionsListen, "", map[string]any{"notifications": filter})
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
