package e2e

import (
	"context"
	"os"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
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
