package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
)

// BenchmarkInsertAudit: what an audit record costs to store on SQLite
// (in the API process; on PostgreSQL the server does the work).
func BenchmarkInsertAudit(b *testing.B) {
	db, err := Open(context.Background(), BackendSQLite, b.TempDir()+"/a.db")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	recs := make([]mcpflow.AuditRecord, 300) // a flush at 1,500 calls/s
	for i := range recs {
		// One caller's calls of one tool: each has its own time, latency
		// and request id.
		recs[i] = mcpflow.AuditRecord{Time: time.Now(), Kind: "call", UserID: "bench", Surface: "mcp 2025-11-25", ThreadID: "t", Server: "demo", Tool: "demo_echo",
			Decision: "allow", Outcome: "ok", LatencyMS: 0.4 + float64(i)/1000, RequestID: fmt.Sprintf("%016x", i), Client: "mcp-go/1.2.1"}
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range recs {
			recs[i].Time = time.Now() // later than the last flush's, as a log's times are
		}
		if err := db.InsertAudit(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
}
