package stdiopipe_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/stdiopipe"
)

// rawPipes is newPipes for any transport (stdiopipe's or mcp-go's NewIO),
// so a scenario can be run against both.
type rawPipes struct {
	tr    transport.Interface
	lines *bufio.Scanner
	out   *io.PipeWriter
}

func newRawPipes(t *testing.T, mk func(out io.Reader, in io.WriteCloser) transport.Interface) *rawPipes {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	tr := mk(outR, inW)
	require.NoError(t, tr.Start(context.Background()))
	t.Cleanup(func() { _ = outW.Close(); _ = tr.Close(); _ = inR.Close() })
	sc := bufio.NewScanner(inR)
	sc.Buffer(nil, 1<<20)
	return &rawPipes{tr: tr, lines: sc, out: outW}
}

var reviewTransports = map[string]func(out io.Reader, in io.WriteCloser) transport.Interface{
	"stdiopipe": func(out io.Reader, in io.WriteCloser) transport.Interface { return stdiopipe.New(out, in, nil) },
	"mcp-go":    func(out io.Reader, in io.WriteCloser) transport.Interface { return transport.NewIO(out, in, nil) },
}

// Params already encoded but not compact (json.MarshalIndent, or
// json.Encoder's trailing newline) must still go out as one line: json.Marshal
// (mcp-go) compacts a json.RawMessage, encodeRequest splices it as it is and
// the newlines inside it split the request into several lines, none of them
// a JSON-RPC message.
func TestReviewRawParamsStayOnOneLine(t *testing.T) {
	for name, mk := range reviewTransports {
		t.Run(name, func(t *testing.T) {
			p := newRawPipes(t, mk)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			params := json.RawMessage("{\n  \"name\": \"echo\",\n  \"arguments\": {}\n}\n")
			done := make(chan error, 1)
			go func() {
				_, err := p.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("r1"), Method: "tools/call", Params: params})
				done <- err
			}()
			require.True(t, p.lines.Scan())
			line := p.lines.Text()
			require.True(t, json.Valid([]byte(line)), "the request is not one line of JSON: %q", line)
			require.JSONEq(t, `{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"echo","arguments":{}}}`, line)
			cancel()
			<-done
		})
	}
}

// An answer's id is matched however the server spells the same JSON value.
// A server that does not escape '<', '>' or '&' (JSON.stringify, Python's
// json.dumps) echoes "a<b&c>" as it is; SendRequest keys the request by
// json.Marshal's text "a\u003cb\u0026c\u003e", and idKey takes the plain
// text as canonical, so the answer is never matched. Likewise -0 for id 0.
func TestReviewIDSpellings(t *testing.T) {
	cases := []struct {
		name string
		id   mcp.RequestId
		echo string // the id as the server writes it
	}{
		{"html chars unescaped", mcp.NewRequestId("a<b&c>"), `"a<b&c>"`},
		{"line separator unescaped", mcp.NewRequestId("x\u2028y"), "\"x\u2028y\""},
		{"minus zero", mcp.NewRequestId(int64(0)), `-0`},
		// these pass: the control cases
		{"html chars escaped", mcp.NewRequestId("a<b"), `"a\u003cb"`},
		{"float spelling", mcp.NewRequestId(int64(7)), `7.0`},
	}
	for tname, mk := range reviewTransports {
		for _, c := range cases {
			t.Run(tname+"/"+c.name, func(t *testing.T) {
				p := newRawPipes(t, mk)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := p.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: c.id, Method: "tools/call", Params: map[string]any{}})
					done <- err
				}()
				require.True(t, p.lines.Scan())
				_, err := io.WriteString(p.out, `{"jsonrpc":"2.0","id":`+c.echo+`,"result":{}}`+"\n")
				require.NoError(t, err)
				require.NoError(t, <-done, "the answer with id %s was not matched to request %s", c.echo, c.id)
			})
		}
	}
}

// Many callers, answers in reverse order and spelled differently, a server
// request whose handler itself sends a request and waits for its answer
// (which the reader must read meanwhile), and notifications in order.
// Passes: recorded as checked.
func TestReviewConcurrentCallersAndReentrantHandler(t *testing.T) {
	p := newPipes(t)
	var notes []string
	var nmu sync.Mutex
	p.tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		nmu.Lock()
		notes = append(notes, fmt.Sprint(n.Params.AdditionalFields["i"]))
		nmu.Unlock()
	})
	p.tr.SetRequestHandler(func(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		resp, err := p.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("inner"), Method: "ping"})
		if err != nil {
			return nil, err
		}
		return transport.NewJSONRPCResultResponse(r.ID, resp.Result), nil
	})
	const n = 40
	res := make([]chan result, n)
	for i := range n {
		var id mcp.RequestId
		if i%2 == 0 {
			id = mcp.NewRequestId(int64(i))
		} else {
			id = mcp.NewRequestId(fmt.Sprintf("s\"%d", i))
		}
		res[i] = p.request(context.Background(), id, json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
	}
	seen := map[string]bool{}
	for range n {
		m := p.next(t)
		seen[fmt.Sprint(m["id"])] = true
	}
	require.Len(t, seen, n)
	// a server request; its handler's inner request is answered below
	p.send(t, `{"jsonrpc":"2.0","id":"srv","method":"sampling/createMessage"}`)
	m := p.next(t)
	require.Equal(t, "inner", m["id"])
	for i := range 5 {
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/x","params":{"i":%d}}`, i))
	}
	p.send(t, `{"jsonrpc":"2.0","id":"inner","result":{"pong":true}}`)
	m = p.next(t)
	require.Equal(t, "srv", m["id"])
	for i := n - 1; i >= 0; i-- {
		var idText string
		if i%2 == 0 {
			idText = fmt.Sprintf("%d.0", i)
		} else {
			idText = fmt.Sprintf(`"s\u0022%d"`, i)
		}
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"i":%d}}`, idText, i))
	}
	for i := range n {
		r := <-res[i]
		require.NoError(t, r.err)
		require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(r.resp.Result))
	}
	nmu.Lock()
	require.Equal(t, []string{"0", "1", "2", "3", "4"}, notes)
	nmu.Unlock()
}

// Requests as written compared with json.Marshal of the request (what
// mcp-go writes): params nil, nil or null json.RawMessage, a 2026-07-28
// Header (json:"-"), a method that needs escaping. Passes: recorded as
// checked.
func TestReviewEncodingMatchesMarshal(t *testing.T) {
	hdr := http.Header{}
	hdr.Set("Mcp-Method", "tools/call")
	reqs := []transport.JSONRPCRequest{
		{JSONRPC: "2.0", ID: mcp.NewRequestId("a"), Method: "ping"},
		{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(3)), Method: "ping", Params: json.RawMessage(nil)},
		{JSONRPC: "2.0", ID: mcp.NewRequestId("b"), Method: "ping", Params: json.RawMessage(`null`)},
		{JSONRPC: "2.0", ID: mcp.NewRequestId("c\"\\"), Method: "tools/<call>\u2028", Params: json.RawMessage(`{"x":"<&>"}`), Header: hdr},
		{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(4)), Method: "tools/call", Params: map[string]any{"_meta": map[string]any{"a": 1}}, Header: hdr},
		{JSONRPC: "2.0", ID: mcp.NewRequestId(1.5), Method: "x", Params: json.RawMessage(`[1,2]`)},
	}
	p := newPipes(t)
	for _, r := range reqs {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := p.tr.SendRequest(ctx, r); done <- err }()
		require.True(t, p.lines.Scan())
		want, err := json.Marshal(r)
		require.NoError(t, err)
		require.JSONEq(t, string(want), p.lines.Text())
		require.NotContains(t, p.lines.Text(), "Mcp-Method")
		cancel()
		<-done
	}
}

// A notification (or server request) is decoded as mcp-go decodes it: a
// top-level "error" member it does not need does not drop it. stdiopipe
// decodes every line into incoming, whose Error is a
// *mcp.JSONRPCErrorDetails, so a notification carrying "error":5 fails the
// whole decode and is skipped; mcp-go delivers it.
func TestReviewNotificationWithOddErrorMember(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","method":"notifications/a","params":{},"error":5}`,
		`{"jsonrpc":"2.0","method":"notifications/b","params":{},"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/c","params":{}}`,
	}
	for name, mk := range reviewTransports {
		t.Run(name, func(t *testing.T) {
			p := newRawPipes(t, mk)
			got := make(chan string, 10)
			p.tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) { got <- n.Method })
			for _, l := range lines {
				_, err := io.WriteString(p.out, l+"\n")
				require.NoError(t, err)
			}
			var methods []string
			for m := range got {
				methods = append(methods, m)
				if m == "notifications/c" {
					break
				}
			}
			require.Equal(t, []string{"notifications/a", "notifications/b", "notifications/c"}, methods)
		})
	}
}

// Probe (logs only): what each transport does with lines read after
// Close. stdiopipe dispatches every line until stdout ends (notifications
// delivered, the request handler run, its answer written to the closed
// stdin); mcp-go handles the one line its reader was waiting for and stops.
func TestReviewProbeAfterClose(t *testing.T) {
	for name, mk := range reviewTransports {
		t.Run(name, func(t *testing.T) {
			p := newRawPipes(t, mk)
			var mu sync.Mutex
			var all []string
			add := func(s string) { mu.Lock(); all = append(all, s); mu.Unlock() }
			p.tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) { add(n.Method) })
			if b, ok := p.tr.(transport.BidirectionalInterface); ok {
				b.SetRequestHandler(func(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
					add("request " + r.Method)
					return nil, nil
				})
			}
			require.NoError(t, p.tr.Close())
			wrote := make(chan struct{})
			go func() { // mcp-go's reader stops after a line: writes block
				defer close(wrote)
				for i := range 3 {
					_, _ = io.WriteString(p.out, fmt.Sprintf(`{"jsonrpc":"2.0","method":"n%d"}`+"\n", i))
					_, _ = io.WriteString(p.out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"r%d"}`+"\n", i, i))
				}
			}()
			time.Sleep(300 * time.Millisecond)
			_ = p.out.Close()
			<-wrote
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			t.Logf("%s after Close: %v", name, all)
			mu.Unlock()
		})
	}
}
