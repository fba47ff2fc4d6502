package e2e

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/schema"
)

// natsForTest returns JetStream with fresh extractq streams: on an embedded
// server, or on the server EXTRACTQ_E2E_NATS_URL names (e.g. the Debian
// 2.9 server on 127.0.0.1:4222), whose extractq streams and buckets it
// deletes first and last: point it only at a server you can wipe.
func natsForTest(t *testing.T) jetstream.JetStream {
	t.Helper()
	ctx := context.Background()
	url := os.Getenv("EXTRACTQ_E2E_NATS_URL")
	if url == "" {
		url = jobstest.Server(t)
	}
	_, js := jobstest.Connect(t, url)
	wipe := func() {
		for _, s := range []string{jobs.JobsStream, jobs.DLQStream, jobs.AdvisoryStream, "OBJ_" + jobs.DocsBucket, "KV_" + jobs.SchemaBucket} {
			_ = js.DeleteStream(ctx, s)
		}
	}
	if os.Getenv("EXTRACTQ_E2E_NATS_URL") != "" {
		wipe()
		t.Cleanup(wipe)
	}
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	return js
}

func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// registerInvoice registers fleettest's invoice schema as "invoice" with
// sub and returns it and its reference.
func registerInvoice(t *testing.T, sub *submit.Submitter) (*schema.Schema, jobs.SchemaRef) {
	t.Helper()
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sub.RegisterSchema(t.Context(), "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	return sc, ref
}

// pictureSim is the clean simulator whose model reads every picture it is
// shown as invoice INV-7; shown lists the media types of those pictures.
func pictureSim(t *testing.T) (srv *sim.Server, shown func() []string) {
	t.Helper()
	var mu sync.Mutex
	var types []string
	srv = sim.New(fleettest.CleanProfile(), sim.WithSeed(3), sim.WithImageReader(func(_ context.Context, mediaType string, _ []byte) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		types = append(types, mediaType)
		return "Invoice INV-7 from Acme GmbH, total 42.00 EUR", nil
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(types)
	}
}
