package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow"
)

// Admin reads and writes extensions_config.json for the admin API (spec
// §4): masked reads of the raw file, bulk replace, add, and the enabled
// toggle, each a read-modify-write under the file's locks (WithLock) with
// the secret-preserving merge, the stdio launch policy, validation of the
// candidate, an atomic write, an audit log line without values, and then
// OnChange. Errors are mcpflow domain errors (EInvalid, ENotFound,
// EConflict, EInternal) whose messages never contain a secret.
type Admin struct {
	// Path is the extensions_config.json to manage; it is created on the
	// first write when missing.
	Path   string
	Env    func(string) (string, bool) // resolves $VAR for validation; nil: os.LookupEnv
	Policy *LaunchPolicy               // nil: the default allowlist only
	Log    *slog.Logger
	// OnChange runs after every successful write (this process's tool cache
	// resets; other processes converge through the file signature).
	OnChange func()
	// Audit, when set, receives every successful write for the audit log:
	// mcpflow.AuditConfig or AuditPolicies, and what changed (by whom,
	// which servers or rules; never a value).
	Audit func(ctx context.Context, kind, detail string)
}

// Get returns {"mcp_servers": {name: masked server}} from the raw file
// (placeholders unresolved, defaults filled in).
func (a *Admin) Get(ctx context.Context) (*Object, error) {
	return a.view(maskedView)
}

// view renders the file (empty when it does not exist) under its read lock.
func (a *Admin) view(render func(*RawDocument) *Object) (*Object, error) {
	var out *Object
	err := WithReadLock(a.Path, func() error {
		doc, err := a.read()
		if errors.Is(err, fs.ErrNotExist) {
			doc, err = &RawDocument{Root: NewObject()}, nil
		}
		if err != nil {
			return err
		}
		out = render(doc)
		return nil
	})
	if err != nil {
		return nil, adminError(err)
	}
	return out, nil
}

// Put replaces the server set with servers (an API payload's mcp_servers),
// keeping stored secrets where "***" or null stand for them and every
// top-level key other than mcpServers.
func (a *Admin) Put(ctx context.Context, actor string, servers *Object) (*Object, error) {
	return a.write(ctx, actor, "replace", func(doc *RawDocument) error {
		if err := a.policy().CheckAll(servers, a.Env); err != nil {
			return err
		}
		stored, _ := objectAt(doc.Root, "mcpServers")
		return mergeServers(doc, NewObject(), stored, servers)
	})
}

// Add adds servers; none of their names may exist yet (EConflict).
func (a *Admin) Add(ctx context.Context, actor string, servers *Object) (*Object, error) {
	return a.write(ctx, actor, "add", func(doc *RawDocument) error {
		stored, _ := objectAt(doc.Root, "mcpServers")
		for _, name := range servers.Keys() {
			if stored.Has(name) {
				return mcpflow.Errorf(mcpflow.EConflict, "MCP server '%s' already exists", name)
			}
		}
		if err := a.policy().CheckAll(servers, a.Env); err != nil {
			return err
		}
		next := NewObject()
		if stored != nil {
			next = stored.Clone()
		}
		return mergeServers(doc, next, stored, servers)
	})
}

// mergeServers merges each of servers (an API payload's mcp_servers) with
// the stored server of its name, if any, into next, which becomes doc's
// mcpServers.
func mergeServers(doc *RawDocument, next, stored, servers *Object) error {
	for _, name := range servers.Keys() {
		v, _ := servers.Get(name)
		in, ok := v.(*Object)
		if !ok {
			return mcpflow.Errorf(mcpflow.EInvalid, "Invalid MCP configuration: mcp_servers.%s: must be an object", name)
		}
		old, _ := objectAt(stored, name)
		merged, err := mergeServer(in.Clone(), old)
		if err != nil {
			return err
		}
		if err := checkLiteralHeaders(name, merged); err != nil {
			return err
		}
		next.Set(name, merged)
	}
	doc.Root.Set("mcpServers", next)
	return nil
}

// SetEnabled writes only the enabled field of one server, keeping the rest
// of the file as it is (no type key is added). Enabling a stdio server
// screens it with the launch policy first; disabling is always allowed.
func (a *Admin) SetEnabled(ctx context.Context, actor, server string, enabled bool) (*Object, error) {
	kind := "disable"
	if enabled {
		kind = "enable"
	}
	return a.write(ctx, actor, kind, func(doc *RawDocument) error {
		stored, _ := objectAt(doc.Root, "mcpServers")
		s, ok := objectAt(stored, server)
		if !ok {
			return mcpflow.Errorf(mcpflow.ENotFound, "MCP server '%s' not found", server)
		}
		if enabled {
			if err := a.policy().Check(server, s, a.Env); err != nil {
				return err
			}
			if err := checkLiteralHeaders(server, s); err != nil {
				return err
			}
		}
		s.Set("enabled", enabled)
		return nil
	})
}

// checkLiteralHeaders refuses (EInvalid) a server whose static headers
// hold a literal value that fails CheckHeaderValue (spec §3.5: a line
// break, NUL, VT, FF, a character outside ASCII, leading or trailing
// whitespace). The message names the server and the header, never the
// value. A "$VAR" placeholder is not checked here: what it resolves to is
// checked when the server connects (ConnectionProblem), where a failing
// server is skipped with a logged reason, as it is for a file edited by
// hand.
func checkLiteralHeaders(name string, server *Object) error {
	headers, ok := objectAt(server, "headers")
	if !ok {
		return nil
	}
	for _, key := range headers.Keys() {
		v, _ := headers.Get(key)
		value, ok := v.(string)
		if !ok || strings.HasPrefix(value, "$") {
			continue // a non-string fails the decoding, naming the field
		}
		if err := CheckHeaderValue(value); err != nil {
			return mcpflow.Errorf(mcpflow.EInvalid, "Invalid MCP configuration: MCP server '%s' header '%s' %s", name, singleLine(key), err.Error())
		}
	}
	return nil
}

// write runs one read-modify-write: change edits the document.
func (a *Admin) write(ctx context.Context, actor, kind string, change func(doc *RawDocument) error) (*Object, error) {
	var out *Object
	err := WithLock(a.Path, func() error {
		doc, err := a.read()
		if errors.Is(err, fs.ErrNotExist) { // created by this write (a toggle finds no server)
			doc, err = &RawDocument{Root: NewObject()}, nil
		}
		if err != nil {
			return err
		}
		before, _ := objectAt(doc.Root, "mcpServers")
		before = before.Clone() // change may edit servers in place
		beforeBlocks := map[string]any{}
		for _, key := range []string{"policies", "virtualServers"} {
			v, _ := doc.Root.Get(key)
			beforeBlocks[key] = cloneValue(v)
		}
		if err := change(doc); err != nil {
			return err
		}
		if err := a.validate(doc); err != nil {
			return err
		}
		data, err := doc.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode MCP configuration: %w", err)
		}
		if err := WriteFileAtomic(a.Path, append(data, '\n'), a.log()); err != nil {
			return mcpflow.Errorf(mcpflow.EInternal, "Failed to update MCP configuration: %s", ioReason(err))
		}
		switch kind {
		case "replace policies", "replace virtualServers":
			key := strings.TrimPrefix(kind, "replace ")
			after, _ := doc.Root.Get(key)
			detail := blockChange(key, beforeBlocks[key], after)
			a.log().Info("MCP "+key+" changed", "actor", actor, "path", a.Path, "change", detail)
			if a.Audit != nil {
				auditKind := mcpflow.AuditPolicies
				if key == "virtualServers" {
					auditKind = mcpflow.AuditConfig
				}
				a.Audit(ctx, auditKind, actor+": "+detail)
			}
		default:
			after, _ := objectAt(doc.Root, "mcpServers")
			detail := a.audit(actor, kind, before, after)
			if a.Audit != nil {
				a.Audit(ctx, mcpflow.AuditConfig, actor+": "+detail)
			}
		}
		out = maskedView(doc)
		return nil
	})
	if err != nil {
		return nil, adminError(err)
	}
	if a.OnChange != nil {
		a.OnChange()
	}
	return out, nil
}

func (a *Admin) read() (*RawDocument, error) {
	data, err := os.ReadFile(a.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, mcpflow.Errorf(mcpflow.EInternal, "Failed to read MCP configuration: %s", ioReason(err))
	}
	doc, err := ParseRawDocument(data)
	if err != nil {
		return nil, mcpflow.Errorf(mcpflow.EInternal, "MCP configuration file is not valid: %s", err.Error())
	}
	return doc, nil
}

// validate decodes the candidate with placeholders resolved and refuses a
// "***" left in any server.
func (a *Admin) validate(doc *RawDocument) error {
	if servers, ok := objectAt(doc.Root, "mcpServers"); ok {
		for _, name := range servers.Keys() {
			v, _ := servers.Get(name)
			if p := maskedPlaceholder("mcpServers."+name, v); p != "" {
				return mcpflow.Errorf(mcpflow.EInvalid, "Cannot persist masked secret placeholder for %s; provide a real value.", p)
			}
		}
	}
	if _, err := doc.Decode("", a.Env); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return mcpflow.Errorf(mcpflow.EInvalid, "Invalid MCP configuration: %s", (&FieldError{Field: fe.Field, Message: fe.Message}).Error())
		}
		return mcpflow.Errorf(mcpflow.EInvalid, "Invalid MCP configuration: %s", err.Error())
	}
	return nil
}

// audit logs who changed which servers how, and returns it for the audit
// log; never a value. A server is
// changed when its stored object differs.
func (a *Admin) audit(actor, kind string, before, after *Object) string {
	var added, removed, changed []string
	for _, n := range after.Keys() {
		old, had := before.Get(n)
		now, _ := after.Get(n)
		switch {
		case !had:
			added = append(added, n)
		case !jsonEqual(old, now):
			changed = append(changed, n)
		}
	}
	for _, n := range before.Keys() {
		if !after.Has(n) {
			removed = append(removed, n)
		}
	}
	a.log().Info("MCP configuration changed", "actor", actor, "change", kind, "path", a.Path,
		"added", orEmpty(added), "removed", orEmpty(removed), "changed", orEmpty(changed))
	return fmt.Sprintf("%s: added %q, removed %q, changed %q", kind, orEmpty(added), orEmpty(removed), orEmpty(changed))
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (a *Admin) policy() *LaunchPolicy {
	if a.Policy == nil {
		return NewLaunchPolicy(nil)
	}
	return a.Policy
}

func (a *Admin) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// maskedView is {"mcp_servers": {name: masked API server}}.
func maskedView(doc *RawDocument) *Object {
	servers := NewObject()
	if stored, ok := objectAt(doc.Root, "mcpServers"); ok {
		for _, name := range stored.Keys() {
			raw, _ := objectAt(stored, name)
			s := apiServer(raw)
			maskServer(s)
			servers.Set(name, s)
		}
	}
	out := NewObject()
	out.Set("mcp_servers", servers)
	return out
}

// adminError makes every error a domain error: policy and merge refusals
// are EInvalid, a missing file for a toggle is ENotFound.
func adminError(err error) error {
	var pe *PolicyError
	var me *MergeError
	var de *mcpflow.Error
	switch {
	case errors.As(err, &pe):
		return &mcpflow.Error{Code: mcpflow.EInvalid, Message: pe.Message}
	case errors.As(err, &me):
		return &mcpflow.Error{Code: mcpflow.EInvalid, Message: me.Message}
	case errors.As(err, &de):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return mcpflow.Errorf(mcpflow.ENotFound, "MCP configuration file not found")
	}
	return mcpflow.Errorf(mcpflow.EInternal, "Failed to update MCP configuration: %s", ioReason(err))
}

// ioReason describes a file error without its path.
func ioReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

var _ mcpflow.ConfigAdmin = (*Admin)(nil)

// MCPConfig implements mcpflow.ConfigAdmin.
func (a *Admin) MCPConfig(ctx context.Context) ([]byte, error) {
	return marshalView(a.Get(ctx))
}

// ReplaceMCPServers implements mcpflow.ConfigAdmin (PUT).
func (a *Admin) ReplaceMCPServers(ctx context.Context, actor string, body []byte) ([]byte, error) {
	servers, err := parseServersBody(body)
	if err != nil {
		return nil, err
	}
	return marshalView(a.Put(ctx, actor, servers))
}

// AddMCPServers implements mcpflow.ConfigAdmin (POST servers).
func (a *Admin) AddMCPServers(ctx context.Context, actor string, body []byte) ([]byte, error) {
	servers, err := parseServersBody(body)
	if err != nil {
		return nil, err
	}
	return marshalView(a.Add(ctx, actor, servers))
}

// SetMCPServerEnabled implements mcpflow.ConfigAdmin (PATCH).
func (a *Admin) SetMCPServerEnabled(ctx context.Context, actor, server string, enabled bool) ([]byte, error) {
	return marshalView(a.SetEnabled(ctx, actor, server, enabled))
}

// PolicyConfig implements mcpflow.ConfigAdmin: {"policies": the block as
// the file holds it, or null}.
func (a *Admin) PolicyConfig(ctx context.Context) ([]byte, error) {
	return marshalView(a.view(blockView("policies")))
}

// ReplacePolicies implements mcpflow.ConfigAdmin (PUT): the body is
// {"policies": {...}} ({"policies": null} removes them), checked and
// compiled like the file before it is written.
func (a *Admin) ReplacePolicies(ctx context.Context, actor string, body []byte) ([]byte, error) {
	return a.replaceBlock(ctx, actor, "policies", body)
}

// VirtualServers implements mcpflow.ConfigAdmin: {"virtualServers": the
// block as the file holds it, or null}.
func (a *Admin) VirtualServers(ctx context.Context) ([]byte, error) {
	return marshalView(a.view(blockView("virtualServers")))
}

// ReplaceVirtualServers implements mcpflow.ConfigAdmin (PUT), like
// ReplacePolicies for {"virtualServers": {...}}.
func (a *Admin) ReplaceVirtualServers(ctx context.Context, actor string, body []byte) ([]byte, error) {
	return a.replaceBlock(ctx, actor, "virtualServers", body)
}

// replaceBlock writes the top-level block key from a body {key: {...}}
// ({key: null} removes it), validated with the whole file.
func (a *Admin) replaceBlock(ctx context.Context, actor, key string, body []byte) ([]byte, error) {
	bad := mcpflow.Errorf(mcpflow.EInvalid, `request body must be {"%s": {...}} or {"%s": null}`, key, key)
	var root Object
	if err := root.UnmarshalJSON(body); err != nil {
		return nil, bad
	}
	v, ok := root.Get(key)
	if _, isObj := v.(*Object); !ok || (v != nil && !isObj) {
		return nil, bad
	}
	for _, k := range root.Keys() {
		if k != key {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "unknown field %q in the request body", k)
		}
	}
	var out *Object
	_, err := a.write(ctx, actor, "replace "+key, func(doc *RawDocument) error {
		if v == nil {
			doc.Root.Delete(key)
		} else {
			doc.Root.Set(key, v)
		}
		out = blockView(key)(doc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out.MarshalJSON()
}

// blockView renders {key: the top-level block as the file holds it}.
func blockView(key string) func(*RawDocument) *Object {
	return func(doc *RawDocument) *Object {
		out := NewObject()
		v, _ := doc.Root.Get(key)
		out.Set(key, cloneValue(v))
		return out
	}
}

// blockChange says what a write changed in a policies or virtualServers
// block, for the log and the audit record: the keys that changed, and the
// names of the rules, limits or virtual servers before and after. Never a
// value.
func blockChange(key string, before, after any) string {
	b, _ := before.(*Object)
	aft, _ := after.(*Object)
	var changed []string
	for _, k := range unionKeys(b, aft) {
		bv, _ := b.Get(k)
		av, _ := aft.Get(k)
		if !jsonEqual(bv, av) {
			changed = append(changed, k)
		}
	}
	if key == "virtualServers" {
		return fmt.Sprintf("virtual servers before %q, after %q; changed %q", orEmpty(b.Keys()), orEmpty(aft.Keys()), orEmpty(changed))
	}
	return fmt.Sprintf("changed %q; rules before %q, after %q; limits before %q, after %q", orEmpty(changed),
		listNames(b, "rules"), listNames(aft, "rules"), listNames(b, "limits"), listNames(aft, "limits"))
}

func unionKeys(a, b *Object) []string {
	keys := slices.Clone(a.Keys())
	for _, k := range b.Keys() {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// listNames are the "name"s of the objects of the list at key of o.
func listNames(o *Object, key string) []string {
	names := []string{}
	v, _ := o.Get(key)
	list, _ := v.([]any)
	for _, e := range list {
		if eo, ok := e.(*Object); ok {
			n, _ := eo.Get("name")
			s, _ := n.(string)
			names = append(names, s)
		}
	}
	return names
}

func marshalView(v *Object, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return v.MarshalJSON()
}

// parseServersBody reads {"mcp_servers": {name: server object}}.
func parseServersBody(body []byte) (*Object, error) {
	bad := mcpflow.Errorf(mcpflow.EInvalid, `request body must be {"mcp_servers": {"<name>": {...}}}`)
	var root Object
	if err := root.UnmarshalJSON(body); err != nil {
		return nil, bad
	}
	v, ok := root.Get("mcp_servers")
	servers, isObj := v.(*Object)
	if !ok || !isObj {
		return nil, bad
	}
	for _, k := range root.Keys() {
		if k != "mcp_servers" {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "unknown field %q in the request body", k)
		}
	}
	for _, name := range servers.Keys() {
		if s, _ := servers.Get(name); s == nil {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "Invalid MCP configuration: mcp_servers.%s: must be an object", name)
		}
		if _, ok := objectAt(servers, name); !ok {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "Invalid MCP configuration: mcp_servers.%s: must be an object", name)
		}
	}
	return servers, nil
}
