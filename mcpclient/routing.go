package mcpclient

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
)

// RoutingHints is the function behind Runtime.RoutingHints.
func RoutingHints(tools []mcpflow.Tool) string {
	var hinted []mcpflow.Tool
	for _, t := range tools {
		if t.Routing != nil && t.Routing.Mode == config.RoutingPrefer && len(t.Routing.Keywords) > 0 {
			hinted = append(hinted, t)
		}
	}
	if len(hinted) == 0 {
		return ""
	}
	sort.SliceStable(hinted, func(i, j int) bool {
		if hinted[i].Routing.Priority != hinted[j].Routing.Priority {
			return hinted[i].Routing.Priority > hinted[j].Routing.Priority
		}
		return hinted[i].Name < hinted[j].Name
	})
	var b strings.Builder
	b.WriteString("<mcp_routing_hints>\n")
	for _, t := range hinted {
		kw := make([]string, len(t.Routing.Keywords))
		for i, k := range t.Routing.Keywords {
			kw[i] = htmlEscape(k)
		}
		fmt.Fprintf(&b, "When the user's request involves %s: prefer the `%s` tool.\n", joinOr(kw), htmlEscape(t.Name))
	}
	b.WriteString("</mcp_routing_hints>")
	return b.String()
}

func joinOr(items []string) string {
	switch len(items) {
	case 1:
		return items[0]
	case 2:
		return items[0] + " or " + items[1]
	default:
		return strings.Join(items[:len(items)-1], ", ") + ", or " + items[len(items)-1]
	}
}

var htmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;")

func htmlEscape(s string) string { return htmlReplacer.Replace(s) }
