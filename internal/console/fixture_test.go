package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// The console's tests share one fleet, filled by a real run: an embedded
// NATS server, a throwaway audit database and a worker serving two pools
// of the in-process simulator, built once by TestMain.
//
//   - run "faulty" (pool sim_sloppy): a model that always answers a
//     currency outside the schema's enum and never fixes it, so every
//     document ends as a dead letter whose violation sits on /currency;
//     one document's text and id hold HTML and a <script>.
//   - run "clean" (pool sim_clean): a perfect model, every document a
//     result.
//   - run "paged": the two-page PDF of examples/documents, once to each
//     model: a result whose sources carry pages, and a dead letter of a
//     document with pages.
//
// The worker keeps running, so a resubmission to sim:clean turns a dead
// letter into a result while a test watches. Tests call need(t) first.
var (
	fx      *fixture
	fxOnce  sync.Once
	fxErr   error
	fxClose = func() {}
)

// need builds the shared fleet on first use (benchmarks never pay for it).
func need(t testing.TB) {
	t.Helper()
	fxOnce.Do(func() {
		fx, fxErr = newFixture()
		if fxErr == nil {
			fxClose = fx.close
		}
	})
	if fxErr != nil {
		t.Fatalf("console test fleet: %v", fxErr)
	}
}

const (
	token       = "console-test-token-0123456789"
	faultyRun   = "faulty"
	cleanRun    = "clean"
	faultyDocs  = 12
	cleanDocs   = 9
	workerID    = "console-test-worker"
	pagedRun    = "paged"
	pagedOK     = "paged-ok.pdf"
	pagedDead   = "paged-dead.pdf"
	hostileText = "INVOICE INV-666\nFrom: <b>Evil</b> & Co <script>alert('pwned')</script>\nTotal due: 12.50 EUR\n<img src=x onerror=alert(2)>\n"
)

// hostileID is the id of the document whose text holds HTML.
var hostileID = `evil-<i>doc</i>"'&<script>alert(1)</script>`

type fixture struct {
	store   *audit.Store
	js      jetstream.JetStream
	nc      *nats.Conn
	natsURL string
	dbURL   string
	sc      *schema.Schema
	log     *slog.Logger
	// faultyIDs are the documents of run "faulty", in submission order.
	faultyIDs []string

	stopWorker func()
	cleanup    []func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	fxClose()
	os.Exit(code)
}

func newFixture() (_ *fixture, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := &fixture{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	dbURL, drop, err := testenv.TempDatabase(ctx)
	if err != nil {
		return nil, err
	}
	f.cleanup = append(f.cleanup, func() { _ = drop() })
	f.dbURL = dbURL
	if f.store, err = audit.Open(ctx, dbURL); err != nil {
		return nil, err
	}
	f.cleanup = append(f.cleanup, f.store.Close)
	if err := f.store.Migrate(ctx); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "console-nats-")
	if err != nil {
		return nil, err
	}
	f.cleanup = append(f.cleanup, func() { os.RemoveAll(dir) })
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true, MaxPayload: 8 << 20})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return nil, fmt.Errorf("embedded nats-server did not start")
	}
	f.cleanup = append(f.cleanup, ns.Shutdown)
	f.natsURL = ns.ClientURL()
	if f.nc, err = nats.Connect(f.natsURL); err != nil {
		return nil, err
	}
	f.cleanup = append(f.cleanup, f.nc.Close)
	if f.js, err = jetstream.New(f.nc); err != nil {
		return nil, err
	}
	if err := jobs.EnsureStreams(ctx, f.js); err != nil {
		return nil, err
	}
	if f.sc, err = schema.Compile([]byte(fleettest.Schema)); err != nil {
		return nil, err
	}
	if err := f.startWorker(); err != nil {
		return nil, err
	}
	sub := submit.New(f.js, f.store)
	ref, err := sub.RegisterSchema(ctx, "invoice", f.sc)
	if err != nil {
		return nil, err
	}
	for i := range faultyDocs {
		f.faultyIDs = append(f.faultyIDs, fmt.Sprintf("faulty-%03d", i))
	}
	f.faultyIDs[3] = hostileID
	if err := f.submit(ctx, sub, ref, faultyRun, "sim:sloppy", f.faultyIDs, func(i int) string {
		if f.faultyIDs[i] == hostileID {
			return hostileText
		}
		return fleettest.Document(i)
	}); err != nil {
		return nil, err
	}
	var cleanIDs []string
	for i := range cleanDocs {
		cleanIDs = append(cleanIDs, fmt.Sprintf("clean-%03d", i))
	}
	if err := f.submit(ctx, sub, ref, cleanRun, "sim:clean", cleanIDs, func(i int) string { return fleettest.Document(100 + i) }); err != nil {
		return nil, err
	}
	if err := f.submitPaged(ctx, sub, ref); err != nil {
		return nil, err
	}
	if err := f.waitFinal(ctx, faultyDocs+cleanDocs+2); err != nil {
		return nil, err
	}
	return f, nil
}

// faultyProfile always answers a currency outside the enum and never
// fixes it after feedback.
func faultyProfile() sim.Profile {
	return sim.Profile{Name: "console-faulty", Faults: sim.FaultRates{EnumOutside: 1}, FixProbability: 0, FaultModes: sim.FaultModesAll}
}

// startWorker runs a worker serving sim:sloppy (the faulty simulator) and
// sim:clean, with its fleet membership, until the fixture closes.
func (f *fixture) startWorker() error {
	faulty := sim.New(faultyProfile(), sim.WithSeed(7))
	clean := sim.New(fleettest.CleanProfile(), sim.WithSeed(7))
	f.cleanup = append(f.cleanup, faulty.Close, clean.Close)
	factory := func(spec string) (llm.Provider, error) {
		srv := clean
		if strings.HasPrefix(spec, "sim:sloppy") {
			srv = faulty
		}
		return simprovider.New(spec, srv)
	}
	writer, err := f.store.NewWriter(context.Background())
	if err != nil {
		return err
	}
	var pools []worker.Pool
	var budgets []*ratelimit.Pool
	for _, spec := range []string{"sim:sloppy", "sim:clean"} {
		b := ratelimit.NewPool(spec, ratelimit.Limits{Concurrency: 4, RPM: 6000}, ratelimit.WithLogger(f.log))
		budgets = append(budgets, b)
		pools = append(pools, worker.Pool{Name: jobs.PoolFor(spec), Concurrency: 4, Budget: b})
	}
	fast := extractq.WithTransport(extractq.Transport{Retries: 4, Base: time.Millisecond, Cap: 5 * time.Millisecond})
	w, err := worker.New(f.js, writer, worker.NewEngine(fast), worker.WithID(workerID), worker.WithPools(pools...),
		worker.WithConsumerSettings(jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 100}),
		worker.WithProviders(factory), worker.WithLogger(f.log), worker.WithPullWait(200*time.Millisecond))
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	members, err := ratelimit.StartMembership(ctx, f.js, workerID, budgets, ratelimit.WithMembershipLogger(f.log))
	if err != nil {
		stop()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	f.stopWorker = func() {
		once.Do(func() {
			stop()
			<-done
			members.Stop()
			_ = writer.Close(context.Background())
		})
	}
	f.cleanup = append(f.cleanup, f.stopWorker)
	return nil
}

func (f *fixture) submit(ctx context.Context, sub *submit.Submitter, ref jobs.SchemaRef, run, provider string, ids []string, text func(int) string) error {
	model, pool, err := submit.ResolveProvider(provider)
	if err != nil {
		return err
	}
	job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: run, Options: jobs.Options{MaxReasks: new(1)}}
	sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error {
		for i, id := range ids {
			if err := fn(submit.Doc{ID: id, Source: "console-test", Text: text(i)}); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	if sum.Queued != len(ids) {
		return fmt.Errorf("submit %s: %+v, want %d queued", run, sum, len(ids))
	}
	return nil
}

// submitPaged submits the two-page PDF of examples/documents (a cover
// letter, then the invoice) in run "paged": as pagedOK to the clean model
// (a result whose sources carry pages) and as pagedDead to the faulty one
// (a dead letter of a document with pages).
func (f *fixture) submitPaged(ctx context.Context, sub *submit.Submitter, ref jobs.SchemaRef) error {
	var doc intake.Doc
	r := intake.Reader{}
	if err := r.Read(ctx, []string{"../../examples/documents/invoice-two-pages.pdf"}, func(d intake.Doc) error { doc = d; return d.Err }); err != nil {
		return err
	}
	for id, provider := range map[string]string{pagedOK: "sim:clean", pagedDead: "sim:sloppy"} {
		model, pool, err := submit.ResolveProvider(provider)
		if err != nil {
			return err
		}
		d := doc
		d.ID = id
		job := submit.Job{Schema: ref, Provider: provider, Model: model, Pool: pool, Run: pagedRun, Options: jobs.Options{MaxReasks: new(1)}}
		if sum, err := sub.Submit(ctx, job, func(fn func(submit.Doc) error) error { return fn(d) }, nil); err != nil || sum.Queued != 1 {
			return fmt.Errorf("submit %s: %+v, %v", id, sum, err)
		}
	}
	return nil
}

// waitFinal waits until n jobs are final in the audit.
func (f *fixture) waitFinal(ctx context.Context, n int) error {
	for {
		var final int
		if err := f.store.Pool().QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status <> 'retrying'").Scan(&final); err != nil {
			return err
		}
		if final >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d jobs final: %w", final, n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (f *fixture) close() {
	for i := len(f.cleanup) - 1; i >= 0; i-- {
		f.cleanup[i]()
	}
}

// console returns a console on the fixture: read-only, or with writes and
// the test token.
func (f *fixture) console(t testing.TB, writes bool) *Server {
	t.Helper()
	cfg := Config{Store: f.store, JS: f.js, Log: f.log, PageSize: 5}
	if writes {
		cfg.AllowWrites, cfg.Token = true, token
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// client is a browser stand-in for handler tests: cookies kept, redirects
// not followed (tests look at them).
type client struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func newClient(t testing.TB, h http.Handler) *client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: srv.URL, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) get(path string) (int, string, http.Header) {
	c.t.Helper()
	resp, err := c.hc.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (c *client) post(path string, form url.Values) (int, string, http.Header) {
	c.t.Helper()
	resp, err := c.hc.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// login opens a write session with the test token.
func (c *client) login() {
	c.t.Helper()
	code, body, hdr := c.post("/login", url.Values{"token": {token}, "next": {"/"}})
	if code != http.StatusSeeOther {
		c.t.Fatalf("login: %d %s", code, body)
	}
	if !strings.Contains(hdr.Get("Set-Cookie"), "HttpOnly") || !strings.Contains(hdr.Get("Set-Cookie"), "SameSite=Strict") {
		c.t.Errorf("session cookie %q: want HttpOnly and SameSite=Strict", hdr.Get("Set-Cookie"))
	}
}
