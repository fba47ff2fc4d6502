package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/extractq/extractq/internal/webhook"
)

func TestSealedURL(t *testing.T) {
	t.Parallel()
	const u = "https://alice:pw@hooks.example.com/x?token=tok"
	secret := []byte("s3cret")
	sealed, err := webhook.SealURL(secret, u)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("tok")) || bytes.Contains(sealed, []byte("hooks.example.com")) {
		t.Fatalf("sealed URL shows its text: %q", sealed)
	}
	again, _ := webhook.SealURL(secret, u)
	if bytes.Equal(sealed, again) {
		t.Error("two seals of one URL are equal: the nonce is not random")
	}
	for _, c := range []struct {
		name   string
		secret []byte
		sealed []byte
		err    error
	}{
		{"the same secret", secret, sealed, nil},
		{"another secret", []byte("other"), sealed, webhook.ErrWrongSecret},
		{"tampered", secret, append(append([]byte(nil), sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), webhook.ErrWrongSecret},
		{"truncated", secret, sealed[:4], webhook.ErrWrongSecret},
	} {
		got, err := webhook.OpenURL(c.secret, c.sealed)
		if !errors.Is(err, c.err) || (c.err == nil && got != u) {
			t.Errorf("%s: %q, %v; want %v", c.name, got, err, c.err)
		}
	}
	if webhook.KeyID(secret) != webhook.KeyID([]byte("s3cret")) || webhook.KeyID(secret) == webhook.KeyID([]byte("other")) || len(webhook.KeyID(secret)) != 16 {
		t.Errorf("key ids %s %s: want 16 hex digits, the same for one secret, different for another", webhook.KeyID(secret), webhook.KeyID([]byte("other")))
	}
}

func TestDoneDeliveryID(t *testing.T) {
	t.Parallel()
	a, b, c := webhook.DoneDeliveryID("r", 1), webhook.DoneDeliveryID("r", 2), webhook.DoneDeliveryID("r1", 1)
	if a != webhook.DoneDeliveryID("r", 1) || a == b || a == c || len(a) != 32 {
		t.Errorf("ids %s %s %s: want 32 hex digits, stable, one per run and generation", a, b, c)
	}
}

// A delivery resumed after a crash goes on under its id, numbering its
// tries after those already logged.
func TestResumeNumbersTriesOn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(webhook.HeaderDelivery) != "d1" {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	var logged []int
	s := &webhook.Sender{URL: srv.URL, Secret: []byte("s"), Log: webhook.LogFunc(func(_ context.Context, a webhook.Attempt) error {
		logged = append(logged, a.Attempt)
		return nil
	})}
	r := s.Resume(t.Context(), "run", "done", "d1", 2, []byte(`{}`))
	if !r.Delivered || r.DeliveryID != "d1" || r.Attempts != 3 || len(logged) != 1 || logged[0] != 3 {
		t.Fatalf("result %+v, logged tries %v; want delivered as try 3 of d1", r, logged)
	}
}
