package config

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/policy"
)

// policies decodes the "policies" block (absent or null: none) and
// compiles it, so a file whose conditions do not type-check is refused
// like any invalid key, with the position of the error.
func (d *extDecoder) policies(parent *objReader) (*policy.Config, *policy.Set) {
	obj := parent.object("policies", true)
	if obj == nil || d.err != nil {
		return nil, nil
	}
	r := d.reader(obj, "policies")
	c := &policy.Config{Default: r.enum("default", policy.Allow, policy.Allow, policy.Deny)}
	c.ServerDefaults, _ = r.strMap("server_defaults")
	if v, ok := r.get("rules"); ok && v != nil {
		list, isList := v.([]any)
		if !isList {
			d.errorf("policies.rules", "must be a list of rules (got %s)", kindOf(v))
			return nil, nil
		}
		for i, e := range list {
			path := fmt.Sprintf("policies.rules[%d]", i)
			o, isObj := e.(*Object)
			if !isObj {
				d.errorf(path, "must be an object (got %s)", kindOf(e))
				return nil, nil
			}
			rr := d.reader(o, path)
			c.Rules = append(c.Rules, policy.Rule{Name: rr.requiredStr("name"), Effect: rr.enum("effect", "", policy.Allow, policy.Deny, policy.Approve),
				Servers: rr.strList("servers"), Tools: rr.strList("tools"), When: rr.str("when", "", true),
				Approvers: rr.strList("approvers"), ApprovalTimeoutSeconds: rr.integer("approval_timeout_seconds", 0)})
			if !o.Has("effect") {
				d.errorf(path+".effect", "is required")
			}
			rr.forbidExtras("a rule allows only name, effect, servers, tools, when, approvers and approval_timeout_seconds")
		}
	}
	if v, ok := r.get("limits"); ok && v != nil {
		list, isList := v.([]any)
		if !isList {
			d.errorf("policies.limits", "must be a list of limits (got %s)", kindOf(v))
			return nil, nil
		}
		for i, e := range list {
			path := fmt.Sprintf("policies.limits[%d]", i)
			o, isObj := e.(*Object)
			if !isObj {
				d.errorf(path, "must be an object (got %s)", kindOf(e))
				return nil, nil
			}
			lr := d.reader(o, path)
			l := policy.Limit{Name: lr.requiredStr("name"), Servers: lr.strList("servers"), Tools: lr.strList("tools"),
				Per: lr.enum("per", policy.PerUser, policy.PerUser, policy.PerAll), Burst: lr.integer("burst", 0), Daily: lr.integer("daily", 0)}
			if pm, ok := lr.get("per_minute"); ok {
				f, isNum := number(pm)
				if !isNum {
					d.errorf(path+".per_minute", "must be a number (got %s)", kindOf(pm))
				}
				l.PerMinute = f
			}
			c.Limits = append(c.Limits, l)
			lr.forbidExtras("a limit allows only name, servers, tools, per, per_minute, burst and daily")
		}
	}
	if v, ok := r.get("audit_arguments"); ok && v != nil {
		ao, isObj := v.(*Object)
		if !isObj {
			d.errorf("policies.audit_arguments", "must be an object of lists of argument names (got %s)", kindOf(v))
			return nil, nil
		}
		c.AuditArguments = map[string][]string{}
		ar := d.reader(ao, "policies.audit_arguments")
		for _, tool := range ao.Keys() {
			c.AuditArguments[tool] = ar.strList(tool)
		}
	}
	r.forbidExtras("policies allows only default, server_defaults, rules, limits and audit_arguments")
	if d.err != nil {
		return nil, nil
	}
	set, err := policy.Compile(*c)
	var ce *policy.CompileError
	if errors.As(err, &ce) {
		d.errorf("policies."+ce.Field, "%s", ce.Message)
		return nil, nil
	}
	if err != nil {
		d.errorf("policies", "%s", err.Error())
		return nil, nil
	}
	return c, set
}

// number reads a JSON number as a float64.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// virtualServers decodes the "virtualServers" block (absent or null:
// none): name → {description, tools: [{tool, name, description}]}.
func (d *extDecoder) virtualServers(parent *objReader) map[string]*policy.VirtualServer {
	obj := parent.object("virtualServers", true)
	if obj == nil || d.err != nil {
		return nil
	}
	out := map[string]*policy.VirtualServer{}
	for _, name := range obj.Keys() {
		path := "virtualServers." + name
		if err := mcpflow.ValidateID("virtual server name", name); err != nil {
			d.errorf(path, "%s", mcpflow.ErrorMessage(err))
			return nil
		}
		vo, ok := obj.vals[name].(*Object)
		if !ok {
			d.errorf(path, "must be an object (got %s)", kindOf(obj.vals[name]))
			return nil
		}
		r := d.reader(vo, path)
		vs := &policy.VirtualServer{Description: r.str("description", "", true)}
		list, isList := vo.vals["tools"].([]any)
		r.known["tools"] = true
		if !isList || len(list) == 0 {
			d.errorf(path+".tools", "must be a non-empty list of tools")
			return nil
		}
		names := map[string]bool{}
		for i, e := range list {
			tpath := fmt.Sprintf("%s.tools[%d]", path, i)
			to, isObj := e.(*Object)
			if !isObj {
				d.errorf(tpath, "must be an object (got %s)", kindOf(e))
				return nil
			}
			tr := d.reader(to, tpath)
			vt := policy.VirtualTool{Tool: tr.requiredStr("tool"), Name: tr.str("name", "", true), Description: tr.str("description", "", true)}
			tr.forbidExtras("a virtual server's tool allows only tool, name and description")
			exposed := vt.Name
			if exposed == "" {
				exposed = vt.Tool
			}
			if d.err == nil && names[exposed] {
				d.errorf(tpath, "%q names another tool of the virtual server too", exposed)
			}
			names[exposed] = true
			vs.Tools = append(vs.Tools, vt)
		}
		r.forbidExtras("a virtual server allows only description and tools")
		if d.err != nil {
			return nil
		}
		out[name] = vs
	}
	return out
}
