package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAllowHosts: the console answers to localhost, IP addresses and the
// names it was given, and refuses every other Host (a DNS-rebinding page
// sends its own name) with 421 saying how to allow a name.
func TestAllowHosts(t *testing.T) {
	t.Parallel()
	h := allowHosts([]string{"Console.Internal."}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("page"))
	}))
	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:8090", true},
		{"[::1]:8090", true},
		{"10.1.2.3", true},
		{"localhost:8090", true},
		{"app.localhost", true},
		{"console.internal:443", true},
		{"CONSOLE.INTERNAL", true},
		{"evil.example:8090", false},
		{"rebind.attacker.test", false},
		{"127.0.0.1.nip.io", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Host = tc.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			switch {
			case tc.ok && (w.Code != http.StatusOK || w.Body.String() != "page"):
				t.Errorf("Host %q: %d %q, want the page", tc.host, w.Code, w.Body.String())
			case !tc.ok && (w.Code != http.StatusMisdirectedRequest || !strings.Contains(w.Body.String(), "--allow-host")):
				t.Errorf("Host %q: %d %q, want 421 naming --allow-host", tc.host, w.Code, w.Body.String())
			}
		})
	}
}
