package store

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// auditBase is the instant the audit fixtures count from.
var auditBase = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// auditFixture returns record i of a batch: users, tools, decisions and
// kinds alternate, and each record is a second later than the one before.
func auditFixture(i int) mcpflow.AuditRecord {
	decision, outcome := "allow", mcpflow.OutcomeOK
	if i%3 == 2 {
		decision, outcome = "deny", mcpflow.OutcomeRefused
	}
	kind := mcpflow.AuditCall
	if i%5 == 4 {
		kind = mcpflow.AuditTaskCancel
	}
	return mcpflow.AuditRecord{
		Time:      auditBase.Add(time.Duration(i) * time.Second),
		Kind:      kind,
		UserID:    []string{"alice", "bob"}[i%2],
		Admin:     i%7 == 0,
		Provider:  "oidc",
		Client:    "claude/1.2",
		Surface:   "mcp 2025-11-25",
		ThreadID:  fmt.Sprintf("th-%d", i),
		Server:    "reports",
		Tool:      []string{"build_report", "list_reports", "delete_report"}[i%3],
		Decision:  decision,
		Rule:      fmt.Sprintf("rule-%d", i),
		Outcome:   outcome,
		LatencyMS: float64(i) + 0.25,
		TaskID:    fmt.Sprintf("task-%d", i),
		RequestID: fmt.Sprintf("req-%d", i),
		TraceID:   fmt.Sprintf("%032x", i),
		Detail:    fmt.Sprintf("detail %d", i),
	}
}

// insertAuditFixtures inserts records 0..n-1 of auditFixture in one call
// and returns them with the ids the store gave them (ascending, in insert
// order).
func insertAuditFixtures(t *testing.T, db *DB, n int) []mcpflow.AuditRecord {
	t.Helper()
	recs := make([]mcpflow.AuditRecord, n)
	for i := range recs {
		recs[i] = auditFixture(i)
	}
	require.NoError(t, db.InsertAudit(testCtx, recs))
	all := listAllAudit(t, db, mcpflow.AuditFilter{})
	require.Len(t, all, n)
	for i := range all {
		// Newest first: all[i] is record n-1-i.
		want := recs[n-1-i]
		want.ID = all[i].ID
		require.Equal(t, want, all[i], "record %d", n-1-i)
		if i > 0 {
			require.Equal(t, all[i-1].ID-1, all[i].ID, "ids of one insert are consecutive, in order")
		}
	}
	out := make([]mcpflow.AuditRecord, n)
	for i := range all {
		out[n-1-i] = all[i]
	}
	return out
}

// listAllAudit pages through everything f selects, 100 at a time.
func listAllAudit(t *testing.T, db *DB, f mcpflow.AuditFilter) []mcpflow.AuditRecord {
	t.Helper()
	var out []mcpflow.AuditRecord
	f.Limit, f.Before = 100, 0
	for {
		page, err := db.ListAudit(testCtx, f)
		require.NoError(t, err)
		out = append(out, page...)
		if len(page) < f.Limit {
			return out
		}
		f.Before = page[len(page)-1].ID
	}
}

func auditIDs(recs []mcpflow.AuditRecord) []int64 {
	ids := make([]int64, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// wantAuditIDs returns the ids of the records keep selects, newest first.
func wantAuditIDs(recs []mcpflow.AuditRecord, keep func(i int, r mcpflow.AuditRecord) bool) []int64 {
	ids := []int64{}
	for i := len(recs) - 1; i >= 0; i-- {
		if keep(i, recs[i]) {
			ids = append(ids, recs[i].ID)
		}
	}
	return ids
}

// TestAuditInsertAndFilters: a batch round-trips field for field, and each
// filter, alone and combined, selects exactly the records it names, newest
// first.
func TestAuditInsertAndFilters(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		require.NoError(t, db.InsertAudit(testCtx, nil), "nothing to insert")
		page, err := db.ListAudit(testCtx, mcpflow.AuditFilter{})
		require.NoError(t, err)
		require.Empty(t, page)

		const n = 30
		recs := insertAuditFixtures(t, db, n)
		at := func(i int) time.Time { return auditBase.Add(time.Duration(i) * time.Second) }

		for _, tc := range []struct {
			name string
			f    mcpflow.AuditFilter
			keep func(i int, r mcpflow.AuditRecord) bool
		}{
			{"all", mcpflow.AuditFilter{}, func(int, mcpflow.AuditRecord) bool { return true }},
			{"user", mcpflow.AuditFilter{UserID: "bob"}, func(i int, _ mcpflow.AuditRecord) bool { return i%2 == 1 }},
			{"tool", mcpflow.AuditFilter{Tool: "list_reports"}, func(i int, _ mcpflow.AuditRecord) bool { return i%3 == 1 }},
			{"decision", mcpflow.AuditFilter{Decision: "deny"}, func(i int, _ mcpflow.AuditRecord) bool { return i%3 == 2 }},
			{"kind", mcpflow.AuditFilter{Kind: mcpflow.AuditTaskCancel}, func(i int, _ mcpflow.AuditRecord) bool { return i%5 == 4 }},
			{"since inclusive", mcpflow.AuditFilter{Since: at(20)}, func(i int, _ mcpflow.AuditRecord) bool { return i >= 20 }},
			{"until exclusive", mcpflow.AuditFilter{Until: at(5)}, func(i int, _ mcpflow.AuditRecord) bool { return i < 5 }},
			{"since and until in another zone", mcpflow.AuditFilter{
				Since: at(10).In(time.FixedZone("UTC-5", -5*60*60)),
				Until: at(12).In(time.FixedZone("UTC+9", 9*60*60)),
			}, func(i int, _ mcpflow.AuditRecord) bool { return i == 10 || i == 11 }},
			{"since between records", mcpflow.AuditFilter{Since: at(27).Add(time.Microsecond)}, func(i int, _ mcpflow.AuditRecord) bool { return i >= 28 }},
			{"before", mcpflow.AuditFilter{Before: recs[3].ID}, func(i int, _ mcpflow.AuditRecord) bool { return i < 3 }},
			{"user, tool and decision", mcpflow.AuditFilter{UserID: "alice", Tool: "delete_report", Decision: "deny"},
				func(i int, _ mcpflow.AuditRecord) bool { return i%2 == 0 && i%3 == 2 }},
			{"user, kind, since and before", mcpflow.AuditFilter{UserID: "alice", Kind: mcpflow.AuditCall, Since: at(6), Before: recs[20].ID},
				func(i int, _ mcpflow.AuditRecord) bool { return i%2 == 0 && i%5 != 4 && i >= 6 && i < 20 }},
			{"no match", mcpflow.AuditFilter{UserID: "carol"}, func(int, mcpflow.AuditRecord) bool { return false }},
			{"empty window", mcpflow.AuditFilter{Since: at(8), Until: at(8)}, func(int, mcpflow.AuditRecord) bool { return false }},
		} {
			want := wantAuditIDs(recs, tc.keep)
			page, err := db.ListAudit(testCtx, tc.f)
			require.NoError(t, err, tc.name)
			require.Equal(t, want, auditIDs(page), tc.name)
			for _, r := range page {
				require.Equal(t, recs[r.ID-recs[0].ID], r, tc.name)
			}
		}

		// Limits: 0 is 100, negative is 1, above 1000 is 1000.
		for limit, want := range map[int]int{1: 1, 7: 7, -3: 1, 0: n, 5000: n} {
			page, err := db.ListAudit(testCtx, mcpflow.AuditFilter{Limit: limit})
			require.NoError(t, err)
			require.Equal(t, wantAuditIDs(recs, func(int, mcpflow.AuditRecord) bool { return true })[:want], auditIDs(page), "limit %d", limit)
		}
	})
}

// TestAuditLimitClamp: 0 means 100 and the page never exceeds 1000.
func TestAuditLimitClamp(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		recs := make([]mcpflow.AuditRecord, 1100)
		for i := range recs {
			recs[i] = mcpflow.AuditRecord{Time: auditBase, Kind: mcpflow.AuditCall, Tool: fmt.Sprintf("t%d", i)}
		}
		require.NoError(t, db.InsertAudit(testCtx, recs))
		for limit, want := range map[int]int{0: 100, 1000: 1000, 1001: 1000, math.MaxInt: 1000} {
			page, err := db.ListAudit(testCtx, mcpflow.AuditFilter{Limit: limit})
			require.NoError(t, err)
			require.Len(t, page, want, "limit %d", limit)
			require.Equal(t, "t1099", page[0].Tool, "newest first")
			require.Equal(t, fmt.Sprintf("t%d", 1100-want), page[want-1].Tool)
		}
	})
}

// TestAuditCursor: 250 records, inserted in two calls, paged 100 at a time
// with Before: every record exactly once, in descending id order, and
// pages of 100, 100 and 50.
func TestAuditCursor(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		var recs []mcpflow.AuditRecord
		for i := range 250 {
			recs = append(recs, auditFixture(i))
		}
		require.NoError(t, db.InsertAudit(testCtx, recs[:130]))
		require.NoError(t, db.InsertAudit(testCtx, recs[130:]))

		seen := map[int64]bool{}
		var ids []int64
		var sizes []int
		f := mcpflow.AuditFilter{Limit: 100}
		for {
			page, err := db.ListAudit(testCtx, f)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			sizes = append(sizes, len(page))
			for _, r := range page {
				require.False(t, seen[r.ID], "id %d twice", r.ID)
				seen[r.ID] = true
				ids = append(ids, r.ID)
			}
			f.Before = page[len(page)-1].ID
		}
		require.Equal(t, []int{100, 100, 50}, sizes)
		require.Len(t, ids, 250)
		for i := 1; i < len(ids); i++ {
			require.Equal(t, ids[i-1]-1, ids[i], "descending ids, none skipped")
		}
		// The records come back in reverse insert order, field for field.
		for i, id := range ids {
			page, err := db.ListAudit(testCtx, mcpflow.AuditFilter{Before: id + 1, Limit: 1})
			require.NoError(t, err)
			want := recs[249-i]
			want.ID = id
			require.Equal(t, []mcpflow.AuditRecord{want}, page)
			if i == 3 {
				break // the ordering is checked above; a few field checks suffice
			}
		}

		// The cursor combines with a filter.
		var bobs []int64
		f = mcpflow.AuditFilter{UserID: "bob", Limit: 40}
		for {
			page, err := db.ListAudit(testCtx, f)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				require.Equal(t, "bob", r.UserID)
				bobs = append(bobs, r.ID)
			}
			f.Before = page[len(page)-1].ID
		}
		require.Len(t, bobs, 125)
		for i := 1; i < len(bobs); i++ {
			require.Equal(t, bobs[i-1]-2, bobs[i])
		}
	})
}

// TestAuditTruncation: a value longer than its column is cut to the
// column's size in characters (multi-byte characters stay whole) instead
// of failing the batch; values that fit, and the unbounded detail, are
// kept whole. Invalid UTF-8 and NUL bytes do not fail the batch either.
func TestAuditTruncation(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		// The column sizes of migrations/*/00011_audit_records.sql.
		sizes := map[string]int{
			"kind": 32, "user_id": 255, "provider": 255, "client": 255, "surface": 32,
			"thread_id": 255, "server": 255, "tool": 255, "decision": 16, "rule": 255,
			"outcome": 32, "task_id": 64, "request_id": 64, "trace_id": 32,
		}
		long := func(col string) string { return strings.Repeat("é", sizes[col]+7) }
		fields := func(r *mcpflow.AuditRecord) map[string]*string {
			return map[string]*string{
				"kind": &r.Kind, "user_id": &r.UserID, "provider": &r.Provider, "client": &r.Client,
				"surface": &r.Surface, "thread_id": &r.ThreadID, "server": &r.Server, "tool": &r.Tool,
				"decision": &r.Decision, "rule": &r.Rule, "outcome": &r.Outcome, "task_id": &r.TaskID,
				"request_id": &r.RequestID, "trace_id": &r.TraceID,
			}
		}

		// An over-long tool name among records that fit.
		longTool := strings.Repeat("x", 250) + "ßßßßßßßßßß"
		ok1, ok2 := auditFixture(0), auditFixture(1)
		over := auditFixture(2)
		over.Tool = longTool
		// Every string column over-long, and a detail far beyond any
		// VARCHAR.
		all := auditFixture(3)
		for col, p := range fields(&all) {
			*p = long(col)
		}
		all.Detail = strings.Repeat("d", 100_000)
		// Exactly at the sizes: kept whole.
		exact := auditFixture(4)
		for col, p := range fields(&exact) {
			*p = strings.Repeat("ü", sizes[col])
		}
		// Bytes PostgreSQL would refuse in text.
		odd := auditFixture(5)
		odd.Tool = "bad\xffutf8\x00nul"
		odd.Detail = "a\x00b"
		odd.LatencyMS = math.NaN()

		require.NoError(t, db.InsertAudit(testCtx, []mcpflow.AuditRecord{ok1, ok2, over, all, exact, odd}))
		got, err := db.ListAudit(testCtx, mcpflow.AuditFilter{})
		require.NoError(t, err)
		require.Len(t, got, 6)
		byTime := map[time.Time]mcpflow.AuditRecord{}
		for _, r := range got {
			byTime[r.Time] = r
		}

		require.Equal(t, ok1.Tool, byTime[ok1.Time].Tool)
		require.Equal(t, ok2.Tool, byTime[ok2.Time].Tool)
		require.Equal(t, strings.Repeat("x", 250)+"ßßßßß", byTime[over.Time].Tool, "cut to 255 characters")
		require.Equal(t, over.UserID, byTime[over.Time].UserID)

		gotAll := byTime[all.Time]
		for col, p := range fields(&gotAll) {
			require.Equal(t, strings.Repeat("é", sizes[col]), *p, col)
		}
		require.Equal(t, all.Detail, gotAll.Detail, "detail is not cut")

		gotExact := byTime[exact.Time]
		gotExact.ID = 0
		require.Equal(t, exact, gotExact)

		gotOdd := byTime[odd.Time]
		require.Equal(t, "bad\uFFFDutf8nul", gotOdd.Tool)
		require.Equal(t, "ab", gotOdd.Detail)
		require.Zero(t, gotOdd.LatencyMS)

		// The filter matches the stored (cut) tool name.
		page, err := db.ListAudit(testCtx, mcpflow.AuditFilter{Tool: strings.Repeat("x", 250) + "ßßßßß"})
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, over.Time, page[0].Time)
	})
}

// TestAuditTimes: times come back in UTC, at microsecond precision, from
// any zone; a zero time is stored as now.
func TestAuditTimes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		zoned := at(0) // 2026-03-04 05:06:07.123456789 UTC+2
		before := time.Now().UTC().Truncate(time.Microsecond)
		require.NoError(t, db.InsertAudit(testCtx, []mcpflow.AuditRecord{
			{Time: zoned, Kind: mcpflow.AuditCall, Tool: "zoned"},
			{Kind: mcpflow.AuditConfig, Tool: "zero"},
		}))
		after := time.Now().UTC()
		got, err := db.ListAudit(testCtx, mcpflow.AuditFilter{})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, "zero", got[0].Tool)
		require.Equal(t, "zoned", got[1].Tool)

		want := time.Date(2026, 3, 4, 3, 6, 7, 123456000, time.UTC)
		require.Equal(t, want, got[1].Time)
		require.Equal(t, time.UTC, got[1].Time.Location())

		require.Equal(t, time.UTC, got[0].Time.Location())
		require.False(t, got[0].Time.Before(before), "%s before %s", got[0].Time, before)
		require.False(t, got[0].Time.After(after), "%s after %s", got[0].Time, after)
		require.Equal(t, got[0].Time, got[0].Time.Truncate(time.Microsecond))

		// The stored microsecond bounds a filter exactly.
		page, err := db.ListAudit(testCtx, mcpflow.AuditFilter{Since: want, Until: want.Add(time.Microsecond)})
		require.NoError(t, err)
		require.Equal(t, []int64{got[1].ID}, auditIDs(page))
		page, err = db.ListAudit(testCtx, mcpflow.AuditFilter{Since: want.Add(time.Microsecond), Until: want.Add(time.Hour)})
		require.NoError(t, err)
		require.Empty(t, page)
	})
}

// TestAuditDeleteBefore: exactly the records older than the cutoff go
// (the cutoff itself stays), in batches when there are more than one
// statement's worth; the count is the number deleted.
func TestAuditDeleteBefore(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		n, err := db.DeleteAuditBefore(testCtx, auditBase.Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "nothing to delete")

		recs := insertAuditFixtures(t, db, 30)
		cut := auditBase.Add(10 * time.Second) // record 10's time

		n, err = db.DeleteAuditBefore(testCtx, cut.In(time.FixedZone("UTC+2", 2*60*60)))
		require.NoError(t, err)
		require.Equal(t, int64(10), n)
		left := listAllAudit(t, db, mcpflow.AuditFilter{})
		require.Equal(t, wantAuditIDs(recs, func(i int, _ mcpflow.AuditRecord) bool { return i >= 10 }), auditIDs(left))

		n, err = db.DeleteAuditBefore(testCtx, cut)
		require.NoError(t, err)
		require.Zero(t, n, "again: nothing older left")

		// Batches of 4: 13 records older than record 23 go in 4 statements.
		n, err = db.deleteAuditBefore(testCtx, auditBase.Add(23*time.Second), 4)
		require.NoError(t, err)
		require.Equal(t, int64(13), n)
		left = listAllAudit(t, db, mcpflow.AuditFilter{})
		require.Equal(t, wantAuditIDs(recs, func(i int, _ mcpflow.AuditRecord) bool { return i >= 23 }), auditIDs(left))

		// An exact multiple of the batch ends with an empty statement.
		n, err = db.deleteAuditBefore(testCtx, auditBase.Add(27*time.Second), 2)
		require.NoError(t, err)
		require.Equal(t, int64(4), n)

		n, err = db.DeleteAuditBefore(testCtx, auditBase.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
		left = listAllAudit(t, db, mcpflow.AuditFilter{})
		require.Empty(t, left)

		// New ids keep growing after a delete: a cursor never sees an id
		// again.
		require.NoError(t, db.InsertAudit(testCtx, []mcpflow.AuditRecord{auditFixture(0)}))
		left = listAllAudit(t, db, mcpflow.AuditFilter{})
		require.Len(t, left, 1)
		require.Greater(t, left[0].ID, recs[29].ID)
	})
}

// Columns empty in every row of an INSERT are left to their defaults
// (InsertAudit's statements differ by the columns they name): rows with
// and without each field, in one statement and across statements, read
// back as written.
func TestAuditSparseColumns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		var recs []mcpflow.AuditRecord
		// Three INSERTs of auditInsertRows: a column empty in all rows of
		// one, equal in all (shared), or varying, in each combination.
		for i := range 2*auditInsertRows + 20 {
			r := mcpflow.AuditRecord{Time: auditBase.Add(time.Duration(i) * time.Millisecond), Kind: mcpflow.AuditCall}
			if i%2 == 0 {
				r.UserID, r.Tool, r.Decision, r.Outcome = fmt.Sprint("u", i), "t", "allow", mcpflow.OutcomeOK
			}
			if i%7 == 0 {
				r.Admin, r.Provider, r.Client, r.TraceID, r.Arguments = true, "idp", "c/1", "0af7651916cd43dd8448eb211c80319c", `{"path":"/x"}`
			}
			if i < 20 {
				r.LatencyMS, r.TaskID, r.Detail = 1.5, "mcp-task-x", "d"
			}
			if i >= auditInsertRows && i < 2*auditInsertRows {
				r.Detail, r.Server, r.LatencyMS = "shared", "srv", 2.25
			}
			if i >= 2*auditInsertRows {
				r.Admin, r.Surface, r.Time = true, "rest", auditBase // equal times too
			}
			recs = append(recs, r)
		}
		require.NoError(t, db.InsertAudit(testCtx, recs))
		got := listAllAudit(t, db, mcpflow.AuditFilter{})
		require.Len(t, got, len(recs))
		for i, g := range got {
			want := recs[len(recs)-1-i]
			want.ID, want.Time = g.ID, want.Time.UTC()
			require.Equal(t, want, g, "record %d", len(recs)-1-i)
		}
	})
}
