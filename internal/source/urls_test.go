package source_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/source"
)

// TestURLStreams opens listed URLs as streams: the client's Timeout bounds
// each wait for bytes, not the whole body (a JSON Lines dump is read
// between batches of its lines), so a slow but steady body is read whole
// and a stalled one fails as that item's error; the server's ETag is the
// stream's version and the URL path's base name the item's name.
func TestURLStreams(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		w.WriteHeader(http.StatusOK)
		switch r.URL.Path {
		case "/slow.jsonl": // 8 pieces, 60 ms apart: longer than the timeout in all
			for range 8 {
				_, _ = io.WriteString(w, "{}\n")
				w.(http.Flusher).Flush()
				time.Sleep(60 * time.Millisecond)
			}
		case "/stalled.jsonl":
			_, _ = io.WriteString(w, "{}\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	list := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(list, []byte(srv.URL+"/slow.jsonl?sig=1\n"+srv.URL+"/stalled.jsonl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var items []source.Item
	if err := source.NewURLs(list, &http.Client{Timeout: 250 * time.Millisecond}, source.S3Options{}).List(t.Context(), "", func(it source.Item) error {
		items = append(items, it)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, says string
		read       int
	}{
		{name: "slow.jsonl", read: 24},
		{name: "stalled.jsonl", read: 3, says: "no answer for 250ms"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			it := items[i]
			if it.Name() != tc.name {
				t.Errorf("name %q, want %q", it.Name(), tc.name)
			}
			st, err := it.Open(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Version != `"v1"` {
				t.Errorf("version %q, want the ETag", st.Version)
			}
			b, err := io.ReadAll(st)
			if len(b) != tc.read {
				t.Errorf("read %d bytes, want %d", len(b), tc.read)
			}
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("a slow, steady body: %v", err)
			case tc.says != "" && (!errors.Is(err, source.ErrItem) || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("a stalled body: %v; want the item's error saying %q", err, tc.says)
			}
		})
	}
}
