package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/mcpclient/stdiopipe"
)

// sendOverStdio sends params as rawRequestID hands them to the stdio
// transport and returns the bytes the child reads on its stdin up to and
// including the first '\n'.
func sendOverStdio(t *testing.T, params json.RawMessage) []byte {
	t.Helper()
	inR, inW := io.Pipe()   // the child's stdin
	outR, outW := io.Pipe() // the child's stdout (never written)
	defer outW.Close()
	tr := stdiopipe.New(outR, inW, nil)
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go func() {
		_, _ = tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
			ID: mcp.NewRequestId(int64(1)), Method: string(mcp.MethodToolsCall), Params: params})
	}()
	line, err := bufio.NewReader(inR).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	_ = inR.Close()
	return line
}

// Arguments whose insignificant whitespace holds a CR but no LF (a client
// may send `{"m":\r"x"}`; the edge passes arguments through raw, trimming
// only their ends) are spliced unchanged by encodeCallParams; stdiopipe
// compacts params holding either. A raw '\r' in the request line would
// split it in two for a stdio server reading lines with universal
// newlines (Python's TextIOWrapper on stdin, Node's readline), which
// would answer neither half. Found by review of encodeCallParams.
func TestReviewStdioRequestHasNoCarriageReturn(t *testing.T) {
	p := callParams(context.Background(), "echo", json.RawMessage("{\"m\":\r\"x\",\r\"n\":1}"), nil)
	b, err := encodeCallParams(p)
	if err != nil {
		t.Fatal(err)
	}
	line := sendOverStdio(t, json.RawMessage(b))
	if i := bytes.IndexAny(line[:len(line)-1], "\r\n"); i >= 0 {
		t.Fatalf("the stdio request line holds a line break at %d: %q", i, line)
	}
}

// Holds: a newline inside the arguments is compacted away by stdiopipe.
func TestReviewStdioRequestNewlineOneLine(t *testing.T) {
	p := callParams(context.Background(), "echo", json.RawMessage("{\n\"m\" : \"a\\nb\"\n}"), map[string]any{"progressToken": "t"})
	b, err := encodeCallParams(p)
	if err != nil {
		t.Fatal(err)
	}
	line := sendOverStdio(t, json.RawMessage(b))
	if bytes.IndexByte(line[:len(line)-1], '\n') >= 0 || !json.Valid(line) {
		t.Fatalf("not one JSON line: %q", line)
	}
}

// Holds: withEnvelope's splice yields valid JSON with the same value as
// json.Marshal's body plus _meta, for bodies encodeCallParams writes.
func TestReviewWithEnvelopeSplice(t *testing.T) {
	s := &Session{version: "2026-07-28", info: mcp.Implementation{Name: "mcpflow", Version: "x"}, clientCaps: map[string]any{}}
	for _, args := range []string{`{}`, "{\"a\":1} \t", "{\"a\":1}\r\n", `[]`, `null`, `"s"`, ` 0 `} {
		for _, meta := range []map[string]any{nil, {"progressToken": "t"}, {}} {
			p := callParams(context.Background(), "echo", json.RawMessage(args), nil)
			if meta != nil {
				p.Meta = mcp.NewMetaFromMap(meta)
			}
			for _, caps := range []map[string]any{nil, {}} {
				var relay *mcpflow.CallRelay
				if caps == nil { // withEnvelope takes the relay's capabilities then
					relay = &mcpflow.CallRelay{ClientCapabilities: json.RawMessage(`{"x":{}}`)}
				}
				got, err := s.withEnvelope(p, caps, relay)
				if err != nil {
					t.Fatalf("%q: %v", args, err)
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal(got, &m); err != nil {
					t.Fatalf("%q meta %v: not JSON: %q", args, meta, got)
				}
				var a, want any
				_ = json.Unmarshal(m["arguments"], &a)
				_ = json.Unmarshal([]byte(args), &want)
				wb, _ := json.Marshal(want)
				ab, _ := json.Marshal(a)
				if string(wb) != string(ab) || len(m["_meta"]) == 0 || string(m["name"]) != `"echo"` {
					t.Fatalf("%q meta %v: %q", args, meta, got)
				}
			}
		}
	}
}
