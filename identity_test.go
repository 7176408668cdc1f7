package mcpflow

import "testing"

func TestSecureURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"https://idp.example.com/keys":  true,
		"HTTPS://idp.example.com":       true,
		"http://127.0.0.1:5556/keys":    true,
		"http://[::1]:8080":             true,
		"http://localhost:8080/x":       true,
		"http://idp.example.com/keys":   false,
		"http://127.0.0.1.example.com/": false,
		"ftp://127.0.0.1/keys":          false,
		"/keys":                         false,
		"://bad":                        false,
	} {
		if got := SecureURL(raw); got != want {
			t.Errorf("SecureURL(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestCallerToken(t *testing.T) {
	t.Parallel()
	if got := CallerToken(t.Context()); got != "" {
		t.Fatalf("no caller token: got %q", got)
	}
	if got := CallerToken(WithCallerToken(t.Context(), "tok")); got != "tok" {
		t.Fatalf("got %q", got)
	}
}
