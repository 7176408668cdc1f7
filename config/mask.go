package config

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Masked is the placeholder of a secret value in admin API answers; sending
// it back keeps the stored value (spec §4.3, §4.4).
const Masked = "***"

// The API's view of a server (spec §4.1): the declared fields in this order,
// with defaults filled in, then the extras as written.
var apiServerFields = []string{"enabled", "type", "command", "args", "env", "url", "headers", "oauth",
	"user_auth", "headers_from_context", "description", "routing", "tools", "tool_name_prefix",
	"tool_call_timeout", "session_init_timeout", "task_toolsets", "native_tasks", "protocol_version", "forward_roots"}

var (
	apiOAuthFields       = []string{"enabled", "token_url", "grant_type", "client_id", "client_secret", "refresh_token", "scope", "audience", "token_field", "token_type_field", "expires_in_field", "default_token_type", "refresh_skew_seconds", "extra_token_params"}
	apiUserAuthFields    = []string{"enabled", "header", "users", "on_missing"}
	apiContextHdrsFields = []string{"enabled", "headers", "on_missing"}
	apiRoutingFields     = []string{"mode", "priority", "keywords"}
)

// apiServer is the admin API's view of a raw server object: declared fields
// with defaults filled (type after the alias rule, session_init_timeout 60),
// then the extras (a raw "transport" included). Nothing is masked.
func apiServer(raw *Object) *Object {
	if raw == nil {
		raw = NewObject()
	}
	out := withDefaults(raw, apiServerFields, map[string]any{
		"enabled": true, "args": []any{}, "env": NewObject(), "headers": NewObject(), "description": "",
		"routing": NewObject(), "tools": NewObject(), "tool_name_prefix": true, "session_init_timeout": json.Number("60"),
		"task_toolsets": []any{}, "native_tasks": false, "forward_roots": false}).(*Object)
	sub := func(k string, fields []string, defs map[string]any) {
		v, _ := out.Get(k)
		out.Set(k, withDefaults(v, fields, defs))
	}
	out.Set("type", apiTransport(raw))
	sub("oauth", apiOAuthFields, map[string]any{
		"enabled": true, "token_url": "", "grant_type": GrantClientCredentials, "client_id": nil, "client_secret": nil,
		"refresh_token": nil, "scope": nil, "audience": nil, "token_field": "access_token", "token_type_field": "token_type",
		"expires_in_field": "expires_in", "default_token_type": "Bearer", "refresh_skew_seconds": json.Number("60"),
		"extra_token_params": NewObject()})
	sub("user_auth", apiUserAuthFields, map[string]any{
		"enabled": true, "header": "Authorization", "users": NewObject(), "on_missing": OnMissingDeny})
	sub("headers_from_context", apiContextHdrsFields, map[string]any{
		"enabled": true, "headers": NewObject(), "on_missing": OnMissingDeny})
	sub("routing", apiRoutingFields, map[string]any{
		"mode": RoutingOff, "priority": json.Number("0"), "keywords": []any{}})
	return out
}

// withDefaults fills the declared fields of an object value in order (a
// field missing from defs is null), then its other keys as they are; nil
// stays nil, a non-object is returned as is for validation to report.
func withDefaults(v any, fields []string, defs map[string]any) any {
	obj, ok := v.(*Object)
	if !ok {
		return v
	}
	out := NewObject()
	for _, f := range fields {
		if x, ok := obj.Get(f); ok {
			out.Set(f, cloneValue(x))
		} else {
			out.Set(f, cloneValue(defs[f]))
		}
	}
	for _, k := range obj.Keys() {
		if !slices.Contains(fields, k) {
			x, _ := obj.Get(k)
			out.Set(k, cloneValue(x))
		}
	}
	return out
}

// maskServer masks an API server object in place (spec §4.3): env and
// headers values, OAuth extra_token_params values and user_auth.users values
// become "***"; oauth.client_secret and oauth.refresh_token become null;
// extras whose key looks secret become "***" (other extras are walked), at
// the server level and inside oauth, user_auth, headers_from_context and
// tools.<name>.
func maskServer(s *Object) {
	maskValues(s, "env")
	maskValues(s, "headers")
	if o, ok := objectAt(s, "oauth"); ok {
		if o.Has("client_secret") {
			o.Set("client_secret", nil)
		}
		if o.Has("refresh_token") {
			o.Set("refresh_token", nil)
		}
		maskValues(o, "extra_token_params")
		maskExtras(o, apiOAuthFields)
	}
	if u, ok := objectAt(s, "user_auth"); ok {
		maskValues(u, "users")
		maskExtras(u, apiUserAuthFields)
	}
	if h, ok := objectAt(s, "headers_from_context"); ok {
		maskExtras(h, apiContextHdrsFields)
	}
	if tools, ok := objectAt(s, "tools"); ok {
		for _, name := range tools.Keys() {
			if t, ok := objectAt(tools, name); ok {
				maskExtras(t, []string{"routing"})
			}
		}
	}
	maskExtras(s, apiServerFields)
}

func objectAt(o *Object, key string) (*Object, bool) {
	v, ok := o.Get(key)
	if !ok {
		return nil, false
	}
	obj, ok := v.(*Object)
	return obj, ok
}

// maskValues replaces every value of the object at key with "***".
func maskValues(o *Object, key string) {
	m, ok := objectAt(o, key)
	if !ok {
		return
	}
	for _, k := range m.Keys() {
		m.Set(k, Masked)
	}
}

// maskExtras masks the keys of o that are not declared fields.
func maskExtras(o *Object, declared []string) {
	for _, k := range o.Keys() {
		if slices.Contains(declared, k) {
			continue
		}
		v, _ := o.Get(k)
		o.Set(k, maskExtra(k, v))
	}
}

// maskExtra masks v found under key: all of it when the key looks secret,
// else its secret-looking parts.
func maskExtra(key string, v any) any {
	if LooksSecret(key) {
		return Masked
	}
	switch x := v.(type) {
	case *Object:
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			x.Set(k, maskExtra(k, e))
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskExtra("", e)
		}
		return x
	}
	return v
}

// MergeError is a write the secret-preserving merge refuses; its message
// names the key, never a value.
type MergeError struct{ Message string }

func (e *MergeError) Error() string { return e.Message }

func mergeErr(format string, args ...any) error {
	return &MergeError{Message: fmt.Sprintf(format, args...)}
}

// mergeServer merges an incoming API server object with the stored raw one
// (nil for a new server) for a bulk write (spec §4.4): "***" restores the
// stored secret and is refused for a key that has none; OAuth secrets sent
// as null keep the stored value and "" clears it; omitted routing, tools,
// user_auth, headers_from_context, native_tasks, protocol_version and forward_roots (mcpflow
// keys a DeerFlow client does not know to send back) and extras (and omitted OAuth
// extra_token_params and extras) are kept from disk; a partial user_auth
// inherits what it leaves out, while its users map, when given, replaces the
// stored one. in is changed and returned.
func mergeServer(in, stored *Object) (*Object, error) {
	if stored == nil {
		stored = NewObject()
	}
	if err := restoreValues(in, stored, "env", "Cannot set env key '%s' to masked value '***'; provide a real value."); err != nil {
		return nil, err
	}
	if err := restoreValues(in, stored, "headers", "Cannot set header '%s' to masked value '***'; provide a real value."); err != nil {
		return nil, err
	}
	for _, k := range []string{"routing", "tools", "user_auth", "headers_from_context", "native_tasks", "protocol_version", "forward_roots"} {
		if !in.Has(k) {
			if v, ok := stored.Get(k); ok {
				in.Set(k, cloneValue(v))
			}
		}
	}
	if err := mergeOAuth(in, stored); err != nil {
		return nil, err
	}
	if err := mergeUserAuth(in, stored); err != nil {
		return nil, err
	}
	if h, ok := objectAt(in, "headers_from_context"); ok {
		sh, _ := objectAt(stored, "headers_from_context")
		if err := mergeExtras(h, sh, apiContextHdrsFields, "headers_from_context."); err != nil {
			return nil, err
		}
	}
	if tools, ok := objectAt(in, "tools"); ok {
		stools, _ := objectAt(stored, "tools")
		for _, name := range tools.Keys() {
			t, ok := objectAt(tools, name)
			if !ok {
				continue
			}
			st, _ := objectAt(stools, name)
			if err := mergeExtras(t, st, []string{"routing"}, "tools."+name+"."); err != nil {
				return nil, err
			}
		}
	}
	if err := mergeExtras(in, stored, apiServerFields, ""); err != nil {
		return nil, err
	}
	return in, nil
}

// restoreValues restores "***" values of the object at key from stored.
func restoreValues(in, stored *Object, key, refuse string) error {
	m, ok := objectAt(in, key)
	if !ok {
		return nil
	}
	sm, _ := objectAt(stored, key)
	for _, k := range m.Keys() {
		if v, _ := m.Get(k); v != Masked {
			continue
		}
		sv, ok := sm.Get(k)
		if !ok {
			return mergeErr(refuse, k)
		}
		m.Set(k, cloneValue(sv))
	}
	return nil
}

func mergeOAuth(in, stored *Object) error {
	o, ok := objectAt(in, "oauth")
	if !ok {
		return nil
	}
	so, _ := objectAt(stored, "oauth")
	for _, k := range []string{"client_secret", "refresh_token"} {
		v, present := o.Get(k)
		switch {
		case !present || v == nil:
			if sv, ok := so.Get(k); ok && sv != nil {
				o.Set(k, cloneValue(sv))
			}
		case v == "":
			o.Set(k, nil)
		}
	}
	if !o.Has("extra_token_params") {
		if v, ok := so.Get("extra_token_params"); ok {
			o.Set("extra_token_params", cloneValue(v))
		}
	}
	if err := restoreValues(o, so, "extra_token_params", "Cannot set OAuth extra_token_params key '%s' to masked value '***'; provide a real value."); err != nil {
		return err
	}
	return mergeExtras(o, so, apiOAuthFields, "oauth.")
}

func mergeUserAuth(in, stored *Object) error {
	u, ok := objectAt(in, "user_auth")
	if !ok {
		return nil
	}
	su, _ := objectAt(stored, "user_auth")
	for _, k := range []string{"header", "users", "on_missing"} {
		if !u.Has(k) {
			if v, ok := su.Get(k); ok {
				u.Set(k, cloneValue(v))
			}
		}
	}
	if err := restoreValues(u, su, "users", "Cannot set user_auth user '%s' to masked value '***'; provide a real value."); err != nil {
		return err
	}
	return mergeExtras(u, su, apiUserAuthFields, "user_auth.")
}

// mergeExtras merges the extra keys of in (those not declared) with stored:
// omitted extras are kept, "***" under a secret-looking key restores the
// stored value, nested objects merge recursively, and a list that still
// holds masked secrets must equal the masked stored list (which is kept).
func mergeExtras(in, stored *Object, declared []string, prefix string) error {
	for _, k := range stored.Keys() {
		if !slices.Contains(declared, k) && !in.Has(k) {
			v, _ := stored.Get(k)
			in.Set(k, cloneValue(v))
		}
	}
	for _, k := range in.Keys() {
		if slices.Contains(declared, k) {
			continue
		}
		v, _ := in.Get(k)
		sv, had := stored.Get(k)
		merged, err := mergeExtraValue(prefix+k, k, v, sv, had)
		if err != nil {
			return err
		}
		in.Set(k, merged)
	}
	return nil
}

func mergeExtraValue(path, key string, v, stored any, had bool) (any, error) {
	if v == Masked && LooksSecret(key) {
		if !had {
			return nil, mergeErr("Cannot set extra config key '%s' to masked value '***'; provide a real value.", path)
		}
		return cloneValue(stored), nil
	}
	switch x := v.(type) {
	case *Object:
		so, _ := stored.(*Object)
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			se, ok := so.Get(k)
			m, err := mergeExtraValue(path+"."+k, k, e, se, ok)
			if err != nil {
				return nil, err
			}
			x.Set(k, m)
		}
		return x, nil
	case []any:
		if maskedPlaceholder("value", x) == "" {
			return x, nil
		}
		sl, ok := stored.([]any)
		if ok {
			masked := maskExtra(key, cloneValue(sl))
			if jsonEqual(masked, x) {
				return cloneValue(sl), nil
			}
		}
		return nil, mergeErr("Cannot edit extra config array '%s' while masked secrets remain; provide real values for the whole array.", path)
	}
	return v, nil
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// maskedPlaceholder returns the path of a "***" left anywhere in v, or "".
func maskedPlaceholder(path string, v any) string {
	switch x := v.(type) {
	case string:
		if x == Masked {
			return path
		}
	case *Object:
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			if p := maskedPlaceholder(path+"."+k, e); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := maskedPlaceholder(fmt.Sprintf("%s[%d]", path, i), e); p != "" {
				return p
			}
		}
	}
	return ""
}
