package fleet_test

import (
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/fleet/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/schema"
)

// TestJobTarget: a job's model identity and pool, or the field that
// cannot work, without connecting.
func TestJobTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		job         fleet.Job
		model, pool string
		field       string
	}{
		{job: fleet.Job{Provider: "openai:gpt-4o-mini"}, model: "openai:gpt-4o-mini", pool: "openai_gpt-4o-mini"},
		{job: fleet.Job{Provider: "sim:realistic", Variant: "v2"}, model: "sim:realistic@v2", pool: "sim_realistic"},
		{job: fleet.Job{Provider: "openai:gpt-4o-mini", Pool: "nightly"}, model: "openai:gpt-4o-mini", pool: "nightly"},
		{job: fleet.Job{Provider: "nosuchfamily:m"}, field: "Provider"},
		{job: fleet.Job{Provider: "openai:gpt-4o-mini", Variant: "a b"}, field: "Variant"},
		{job: fleet.Job{Provider: "openai:gpt-4o-mini", Pool: "a.b c"}, field: "Pool"},
	}
	for _, tc := range tests {
		model, pool, err := tc.job.Target()
		var je *fleet.JobError
		switch {
		case tc.field != "" && (!errors.As(err, &je) || je.Field != tc.field || !errors.Is(err, fleet.ErrBadJob)):
			t.Errorf("%+v: %v, want a JobError for %s matching ErrBadJob", tc.job, err, tc.field)
		case tc.field == "" && (err != nil || model != tc.model || pool != tc.pool):
			t.Errorf("%+v: %q %q %v, want %q %q", tc.job, model, pool, err, tc.model, tc.pool)
		}
	}
}

// TestClientErrors: what a caller branches on, each matched with
// errors.Is: servers without the streams, a job without a schema, no
// documents, a schema that is not registered.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	f := fleettest.Start(t)
	if _, err := fleet.Dial(t.Context(), jobstest.Server(t), f.DatabaseURL); !errors.Is(err, fleet.ErrNotMigrated) {
		t.Errorf("Dial to a NATS server without the streams: %v, want ErrNotMigrated", err)
	}
	c, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc := []fleet.Document{{ID: "a", Text: "total: 1"}}
	if sub, err := c.Submit(t.Context(), fleet.Job{Provider: "fleettest-reader:v1"}, slices.Values(doc)); !errors.Is(err, fleet.ErrBadJob) || sub != nil {
		t.Errorf("a job without a schema: %+v, %v; want ErrBadJob and no submission", sub, err)
	}
	if _, err := c.Submit(t.Context(), fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1"}, slices.Values([]fleet.Document(nil))); !errors.Is(err, fleet.ErrNoDocuments) {
		t.Errorf("no documents: %v, want ErrNoDocuments", err)
	}
	if _, _, err := c.Schema(t.Context(), "nosuch", 0); !errors.Is(err, fleet.ErrNotFound) {
		t.Errorf("an unregistered schema: %v, want ErrNotFound", err)
	}
	v, err := c.RegisterSchema(t.Context(), "totals", s)
	if err != nil {
		t.Fatal(err)
	}
	if got, gv, err := c.Schema(t.Context(), "totals", 0); err != nil || gv != v || got.Fingerprint() != s.Fingerprint() {
		t.Errorf("the registered schema: v%d, %v; want v%d with the same fingerprint", gv, err, v)
	}
	if _, err := c.Resubmit(t.Context(), fleet.Resubmission{Reread: true, Reader: "nosuchformat"}); !errors.Is(err, fleet.ErrBadJob) {
		t.Errorf("a re-read of an unknown format: %v, want ErrBadJob", err)
	}
}

// TestClientStallTimeout: WithStallTimeout reaches the publishing. Every
// reply of the server reaches the client a second late (a loaded or far
// server): the connection, the stream check and the schema's registration
// wait it out, and the publishing, which the default 30 s would also
// wait out, fails after 200 ms without an ack, naming the limit.
func TestClientStallTimeout(t *testing.T) {
	t.Parallel()
	f := fleettest.Start(t)
	slow := delayedReplies(t, f.NATSURL, time.Second)
	c, err := fleet.Dial(t.Context(), slow, f.DatabaseURL, fleet.WithStallTimeout(200*time.Millisecond),
		fleet.WithNATSOptions(nats.Timeout(20*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	docs := []fleet.Document{{ID: "a", Text: "total: 1"}, {ID: "b", Text: "total: 2"}}
	_, err = c.Submit(t.Context(), fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1"}, slices.Values(docs))
	if err == nil || !strings.Contains(err.Error(), "publishing stalled") || !strings.Contains(err.Error(), "200ms") {
		t.Fatalf("Submit through replies a second late with a 200ms stall timeout: %v, want the publishing stalled after 200ms", err)
	}
}

// delayedReplies is a proxy to the NATS server at url that passes what
// the server sends on delay after it came; it returns the proxy's URL.
func delayedReplies(t *testing.T, url string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", strings.TrimPrefix(url, "nats://"))
			if err != nil {
				client.Close()
				continue
			}
			type chunk struct {
				at time.Time
				b  []byte
			}
			late := make(chan chunk, 1024)
			wg.Go(func() { _, _ = io.Copy(server, client); server.Close() })
			wg.Go(func() {
				defer close(late)
				for {
					b := make([]byte, 32<<10)
					n, err := server.Read(b)
					if n > 0 {
						late <- chunk{time.Now(), b[:n]}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() {
				defer client.Close()
				for c := range late {
					time.Sleep(time.Until(c.at.Add(delay)))
					if _, err := client.Write(c.b); err != nil {
						return
					}
				}
			})
		}
	})
	return "nats://" + ln.Addr().String()
}

// TestClientMakesSureOnce: a client registers a schema and makes sure of a
// pool's consumer once, not on every Submit (a remote source submits batch
// by batch): a consumer removed after the first Submit is not made again by
// the same client, and is by a new one.
func TestClientMakesSureOnce(t *testing.T) {
	t.Parallel()
	f := fleettest.Start(t)
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	job := fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1", Run: "once"}
	_, pool, err := job.Target()
	if err != nil {
		t.Fatal(err)
	}
	nc, js := jobstest.Connect(t, f.NATSURL)
	defer nc.Close()
	stream, err := js.Stream(t.Context(), jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	consumerExists := func() bool {
		_, err := stream.Consumer(t.Context(), jobs.ConsumerName(pool))
		return err == nil
	}
	submit := func(c *fleet.Client, id string) {
		t.Helper()
		if sub, err := c.Submit(t.Context(), job, slices.Values([]fleet.Document{{ID: id, Text: "total: 1"}})); err != nil || sub.Queued != 1 {
			t.Fatalf("submit %s: %+v, %v", id, sub, err)
		}
	}
	c, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	submit(c, "a")
	v, err := c.RegisterSchema(t.Context(), "totals", s)
	if err != nil || !consumerExists() {
		t.Fatalf("after the first Submit: schema v%d, %v; the pool's consumer exists: %v", v, err, consumerExists())
	}
	if err := stream.DeleteConsumer(t.Context(), jobs.ConsumerName(pool)); err != nil {
		t.Fatal(err)
	}
	submit(c, "b")
	if consumerExists() {
		t.Error("the same client looked up the pool's consumer again on its second Submit")
	}
	c2, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	submit(c2, "c")
	if !consumerExists() {
		t.Error("a new client did not make the pool's consumer")
	}
	if v2, err := c2.RegisterSchema(t.Context(), "totals", s); err != nil || v2 != v {
		t.Errorf("the same schema from another client: v%d, %v; want v%d", v2, err, v)
	}
}
