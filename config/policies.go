package config

import (
	"errors"
	"fmt"

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
			c.Rules = append(c.Rules, policy.Rule{Name: rr.requiredStr("name"), Effect: rr.enum("effect", "", policy.Allow, policy.Deny),
				Servers: rr.strList("servers"), Tools: rr.strList("tools"), When: rr.str("when", "", true)})
			if !o.Has("effect") {
				d.errorf(path+".effect", "is required")
			}
			rr.forbidExtras("a rule allows only name, effect, servers, tools and when")
		}
	}
	r.forbidExtras("policies allows only default, server_defaults and rules")
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
