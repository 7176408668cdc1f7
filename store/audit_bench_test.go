package store

import (
	"context"
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
	recs := make([]mcpflow.AuditRecord, 100)
	for i := range recs {
		recs[i] = mcpflow.AuditRecord{Time: time.Now(), Kind: "call", UserID: "bench", Surface: "mcp 2025-11-25", ThreadID: "t", Server: "demo", Tool: "demo_echo", Decision: "allow", Outcome: "ok", LatencyMS: 0.4, RequestID: "0123456789abcdef"}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := db.InsertAudit(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
}
