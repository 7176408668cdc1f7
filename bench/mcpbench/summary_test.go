package main

import (
	"testing"
	"time"
)

// Each figure of mcpflow against the peer has the bare hop on the same
// upstream revision as its mcpflow target; governance (mcpflow against
// itself) has none.
func TestFigureFloor(t *testing.T) {
	want := map[string]string{
		"mcpflow-proc-mcp-http-25": "floor-proc-http", "mcpflow-proc-mcp-stdio-25": "floor-proc-stdio",
		"mcpflow-proc-mcp-http": "floor-proc-http-default", "mcpflow-proc-mcp-stdio": "floor-proc-stdio-default",
		"mcpflow-proc-mcp26-http": "floor-proc-http-default", "mcpflow-proc-mcp26-stdio": "floor-proc-stdio-default",
		"mcpflow-proc-http": "floor-proc-http-default", "mcpflow-proc-stdio": "floor-proc-stdio-default",
		"mcpflow-gov-mcp-http-25": "", "mcpflow-gov-http-25": "",
	}
	for _, fg := range figures() {
		w, ok := want[fg.a]
		if !ok {
			t.Fatalf("figure %q reads %s, which this test does not know", fg.what, fg.a)
		}
		if got := fg.floor(); got != w {
			t.Errorf("figure %q (%s): floor %q, want %q", fg.what, fg.a, got, w)
		}
		if w != "" && !summaryReads(w, fg.callers) {
			t.Errorf("the bare hop %s does not run at %d callers for figure %q", w, fg.callers, fg.what)
		}
	}
}

// floorRatios is the figure with the bare hop in mcpflow's place, the
// subtrahend (item 3's direct client) kept; nil when the bare hop did not
// run.
func TestFloorRatios(t *testing.T) {
	at := func(us ...int) []cell {
		var cs []cell
		for _, u := range us {
			cs = append(cs, cell{lat: []time.Duration{time.Duration(u) * time.Microsecond}})
		}
		return cs
	}
	res := &results{cells: map[string]map[int][]cell{}}
	for name, us := range map[string][]int{
		"mcpflow-proc-mcp26-http": {400, 500}, "direct-http-default": {200, 200},
		"peer-http": {300, 300}, "direct-http": {100, 100},
	} {
		for _, c := range at(us...) {
			res.add(name, 1, c)
		}
	}
	var item3 figure
	for _, fg := range figures() {
		if fg.item == "3" && fg.tr == "http" {
			item3 = fg
		}
	}
	if r := item3.floorRatios(res); r != nil {
		t.Fatalf("bare hop not run, got ratios %v", r)
	}
	for _, c := range at(300, 360) {
		res.add("floor-proc-http-default", 1, c)
	}
	got := item3.floorRatios(res)
	// (300 − 200) / (300 − 100), (360 − 200) / (300 − 100)
	if len(got) != 2 || got[0] != 0.5 || got[1] != 0.8 {
		t.Fatalf("bare hop's ratios %v, want [0.5 0.8]", got)
	}
	mine, _, _, _ := item3.eval(res)
	if len(mine) != 2 || mine[0] != 1 || mine[1] != 1.5 {
		t.Fatalf("mcpflow's ratios changed by the bare hop's: %v", mine)
	}
}
