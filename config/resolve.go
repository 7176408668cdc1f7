package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables and file names used to find extensions_config.json.
const (
	// EnvExtensionsConfigPath names the extensions config file (step 2 of Locate).
	EnvExtensionsConfigPath = "MCPFLOW_EXTENSIONS_CONFIG_PATH"
	// EnvDeerFlowExtensionsConfigPath is DeerFlow's spelling of
	// EnvExtensionsConfigPath, honoured when that one is unset or empty.
	EnvDeerFlowExtensionsConfigPath = "DEER_FLOW_EXTENSIONS_CONFIG_PATH"
	// ExtensionsFileName is the file searched for first.
	ExtensionsFileName = "extensions_config.json"
	// LegacyExtensionsFileName is DeerFlow's legacy file name, searched second.
	LegacyExtensionsFileName = "mcp_config.json"
)

// Locate finds the extensions config file (spec §1.1):
//
//  1. explicit (config.yaml extensions_config or MCPFLOW_EXTENSIONS_CONFIG), if non-empty;
//  2. env MCPFLOW_EXTENSIONS_CONFIG_PATH, else DEER_FLOW_EXTENSIONS_CONFIG_PATH;
//  3. dir (normally the config.yaml directory, skipped when empty):
//     extensions_config.json, then mcp_config.json;
//  4. the process working directory, likewise.
//
// A path from step 1 or 2 that does not exist is an error naming the path
// (errors.Is(err, fs.ErrNotExist) holds). When the search of steps 3 and 4
// finds nothing, Locate returns "" and a nil error: extensions are optional.
// A nil env means os.LookupEnv.
func Locate(explicit string, dir string, env func(string) (string, bool)) (string, error) {
	if env == nil {
		env = os.LookupEnv
	}
	if explicit != "" {
		return requireFile(explicit, "extensions_config")
	}
	for _, name := range []string{EnvExtensionsConfigPath, EnvDeerFlowExtensionsConfigPath} {
		if v, ok := env(name); ok && v != "" {
			return requireFile(v, "environment variable "+name)
		}
	}
	dirs := []string{}
	if dir != "" {
		dirs = append(dirs, dir)
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	for _, d := range dirs {
		for _, name := range []string{ExtensionsFileName, LegacyExtensionsFileName} {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	return "", nil
}

// requireFile checks that an operator-asserted path exists and is a file.
func requireFile(path, setBy string) (string, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return "", fmt.Errorf("extensions config file specified by %s at %s is a directory", setBy, path)
	case err == nil:
		return path, nil
	case os.IsNotExist(err):
		return "", fmt.Errorf("extensions config file specified by %s not found at %s: %w", setBy, path, fs.ErrNotExist)
	default:
		return "", fmt.Errorf("extensions config file specified by %s at %s: %w", setBy, path, err)
	}
}

// ResolveEnv returns a deep copy of v with environment placeholders resolved
// (spec §1.1): a string that starts with "$" is replaced, as a whole, by the
// value of the variable named by the rest of the string, or by "" when that
// variable is unset. There is no inline interpolation ("Bearer $TOKEN" stays
// as written). Objects (*Object, map[string]any) and arrays ([]any, []string)
// are resolved recursively — their keys never; every other value is returned
// unchanged. A nil env means os.LookupEnv.
func ResolveEnv(v any, env func(string) (string, bool)) any {
	if env == nil {
		env = os.LookupEnv
	}
	return resolveValue(v, env)
}

func resolveValue(v any, env func(string) (string, bool)) any {
	switch t := v.(type) {
	case string:
		return resolveString(t, env)
	case *Object:
		if t == nil {
			return t
		}
		c := &Object{keys: append([]string(nil), t.keys...), vals: make(map[string]any, len(t.vals))}
		for k, e := range t.vals {
			c.vals[k] = resolveValue(e, env)
		}
		return c
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, e := range t {
			c[k] = resolveValue(e, env)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = resolveValue(e, env)
		}
		return c
	case []string:
		c := make([]string, len(t))
		for i, e := range t {
			c[i] = resolveString(e, env)
		}
		return c
	default:
		return v
	}
}

func resolveString(s string, env func(string) (string, bool)) string {
	name, ok := strings.CutPrefix(s, "$")
	if !ok {
		return s
	}
	if val, ok := env(name); ok {
		return val
	}
	return ""
}

// resolveDocument resolves placeholders in a whole extensions document except
// the values of mcpServers.<name>.headers_from_context.headers, which name
// run-context secret keys and are never env-resolved, and the policies and
// virtualServers blocks.
func resolveDocument(root *Object, env func(string) (string, bool)) *Object {
	out := resolveValue(root, env).(*Object)
	// mcpflow's own policies and virtual servers are taken as written: a
	// rule's name or condition and a tool's description are shown to
	// callers and in errors, where an environment value must never appear.
	for _, key := range []string{"policies", "virtualServers"} {
		if raw, ok := root.Get(key); ok {
			out.vals[key] = cloneValue(raw)
		}
	}
	rawServers, ok := root.Get("mcpServers")
	if !ok {
		return out
	}
	rawMap, ok := rawServers.(*Object)
	if !ok {
		return out
	}
	outMap := out.vals["mcpServers"].(*Object)
	for _, name := range rawMap.keys {
		rawServer, ok := rawMap.vals[name].(*Object)
		if !ok {
			continue
		}
		rawHFC, ok := rawServer.vals["headers_from_context"].(*Object)
		if !ok {
			continue
		}
		rawHeaders, ok := rawHFC.Get("headers")
		if !ok {
			continue
		}
		outHFC := outMap.vals[name].(*Object).vals["headers_from_context"].(*Object)
		outHFC.vals["headers"] = cloneValue(rawHeaders)
	}
	return out
}
