package stdiopipe

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/internal/testsupport/jsontest"
)

// review4Transport is a Transport that is never started (no reader
// goroutine): lines are handed to dispatch directly.
func review4Transport(t *testing.T) *Transport {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	t.Cleanup(func() { _ = outW.Close(); _ = outR.Close(); _ = inR.Close(); _ = inW.Close() })
	return New(outR, inW, nil)
}

// review4Wait registers a waiting request with id 1, as SendRequest does.
func review4Wait(tr *Transport) chan *transport.JSONRPCResponse {
	ch := make(chan *transport.JSONRPCResponse, 1)
	tr.mu.Lock()
	tr.waiting["1"] = waiter{id: mcp.NewRequestId(int64(1)), ch: ch}
	tr.mu.Unlock()
	return ch
}

// Found by review 4, failed before its fix: dispatch trimmed the line with bytes.TrimSpace, which
// removes Unicode white space (U+000B, U+000C, U+0085, U+00A0, U+2028,
// U+3000...), before decoding it. JSON's white space is only space, tab,
// CR and LF: encoding/json (json.Unmarshal, json.Valid) rejects a line
// with any of the others outside a string, and mcp-go's stdio transport,
// which trims only "\r\n" and then calls json.Unmarshal, skips it.
// stdiopipe instead delivered it (here: as the answer to request 1), so it
// took as JSON-RPC a line that is not JSON. Small in practice (a server
// must write such bytes), but it is a parser differential on the one
// line that carries a tool's result.
func TestReview4DispatchRejectsNonJSONWhitespace(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
	// The control: the plain line, and JSON's own white space around it,
	// are delivered.
	for _, line := range []string{answer + "\n", " \t" + answer + "\r\n"} {
		tr := review4Transport(t)
		ch := review4Wait(tr)
		tr.dispatch([]byte(line))
		select {
		case <-ch:
		default:
			t.Fatalf("%q: a valid answer was not delivered", line)
		}
	}
	for _, sp := range []string{"\v", "\f", "\u0085", "\u00a0", "\u2028", "\u3000"} {
		for _, line := range []string{sp + answer + "\n", answer + sp + "\n"} {
			var probe incoming
			if err := json.Unmarshal([]byte(line), &probe); err == nil {
				t.Fatalf("%q: the test assumes encoding/json rejects it", line)
			}
			tr := review4Transport(t)
			ch := review4Wait(tr)
			tr.dispatch([]byte(line))
			select {
			case resp := <-ch:
				t.Errorf("%q: encoding/json rejects the line (not JSON), but dispatch delivered it as the answer %s", line, resp.Result)
			default:
			}
		}
	}
}

// Passes (review 4, edge case not covered before): an integer id beyond
// 2^53 echoed by the server is matched exactly to the int64 id
// SendRequest wrote. idKey's plain path keeps the text; a pure
// encoding/json canonicalization (mcp.RequestId decodes numbers through
// float64) would round 9007199254740993 to 9007199254740992 and lose
// the answer. Guards the fast path against a "simplification".
func TestReview4IDKeyLargeIntegers(t *testing.T) {
	for _, id := range []int64{9007199254740993, -9007199254740993, 9223372036854775807, -9223372036854775808, 0} {
		sent, err := jsonscan.AppendID(nil, mcp.NewRequestId(id).Value())
		if err != nil {
			t.Fatal(err)
		}
		got, ok := idKey(json.RawMessage(sent))
		if !ok || got != string(sent) {
			t.Errorf("id %d: sent %s, idKey of the echo %q %v", id, sent, got, ok)
		}
	}
}

// Passes (review 4, edge cases): an echoed id spelled another way is
// still keyed as SendRequest wrote it: escapes in a string, a fraction or
// exponent of an integer, -0, white space inside a string (kept), a lone
// surrogate escape (decoded to U+FFFD, as json.Marshal of the sent string
// writes it).
func TestReview4IDKeySpellings(t *testing.T) {
	for _, c := range []struct {
		sent any
		echo string
	}{
		{"mcpflow-1", `"mcpflow\u002d1"`},
		{"a/b", `"a\/b"`},
		{int64(7), `7.0`},
		{int64(700), `7e2`},
		{int64(700), `7E+2`},
		{int64(0), `-0.0`},
		{"a\tb", `"a\tb"`},
		{"a\ufffdb", `"a\ud800b"`},
		{"\u2028", `"\u2028"`},
	} {
		sent, err := jsonscan.AppendID(nil, mcp.NewRequestId(c.sent).Value())
		if err != nil {
			t.Fatal(err)
		}
		got, ok := idKey(json.RawMessage(c.echo))
		if !ok || got != string(sent) {
			t.Errorf("sent %q (%s), echo %s: idKey %q %v", c.sent, sent, c.echo, got, ok)
		}
	}
}

// FuzzReview4EncodeRequestOneLine: the request line written to a stdio
// server is exactly one line (no CR or LF before its final LF), valid
// JSON, and json.Marshal's value of the request (or fails where it fails),
// for raw params, methods and string ids of any bytes.
func FuzzReview4EncodeRequestOneLine(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "tools/call", "mcpflow-1")
	f.Add([]byte(" {\r\n\"a\" :\t[1, \"<&>\u2028\"] }\n"), "m\u2028<", "a\"\\\n")
	f.Add([]byte(`null`), "\xff", "\x7f")
	f.Fuzz(func(t *testing.T, raw []byte, method, id string) {
		req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: json.RawMessage(raw)}
		idJSON, err := jsonscan.AppendID(nil, req.ID.Value())
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeRequest(req, idJSON)
		want, wantErr := json.Marshal(req)
		jsontest.SameAsMarshal(t, want, wantErr, got, err)
		if err != nil {
			return
		}
		if len(got) == 0 || got[len(got)-1] != '\n' || bytes.ContainsAny(got[:len(got)-1], "\r\n") || !json.Valid(got) {
			t.Fatalf("not one JSON line: %q", got)
		}
	})
}
