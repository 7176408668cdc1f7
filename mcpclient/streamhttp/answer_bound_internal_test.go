package streamhttp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A message over Options.MaxMessageBytes is not read, as a JSON answer, as
// an SSE event's data and as one long SSE line; one within it is (a 1 KiB
// bound here).
func TestAnswerBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		big  bool
		sse  bool
		line bool // the data on one line longer than the reader's buffer
	}{
		{"json small", false, false, false},
		{"json big", true, false, false},
		{"sse small", false, true, false},
		{"sse big", true, true, false},
		{"sse big line", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			size := 100
			if tc.big {
				size = 2000
			}
			if tc.line {
				size = 40 << 10 // over the 16 KiB reader buffer
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"text":%q}}`, strings.Repeat("x", size))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.sse {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "id: 1\ndata: %s\n\n", answer)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, answer)
			}))
			t.Cleanup(srv.Close)
			tr, err := New(srv.URL, Options{MaxMessageBytes: 1024})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			raw, _, err := tr.SendRaw(ctx, "tools/call", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`), nil)
			if tc.big {
				require.ErrorIs(t, err, errAnswerTooLarge)
				return
			}
			require.NoError(t, err)
			require.Contains(t, string(raw), strings.Repeat("x", size))
		})
	}
}
