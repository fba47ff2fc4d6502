package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Membership defaults.
const (
	// DefaultMembersBucket is the key-value bucket of heartbeats.
	DefaultMembersBucket = "EXTRACTQ_MEMBERS"
	// DefaultMembersTTL is the bucket's age limit when Membership creates
	// it: a worker that stops heartbeating drops out this long after its
	// last beat. Workers beat every third of the bucket's actual TTL.
	DefaultMembersTTL = 6 * time.Second
)

// MembershipOption configures a Membership.
type MembershipOption func(*Membership)

// WithBucket names the heartbeat bucket (default DefaultMembersBucket).
func WithBucket(name string) MembershipOption { return func(m *Membership) { m.bucketName = name } }

// WithTTL sets the bucket's age limit used when the bucket has to be created
// (default DefaultMembersTTL). An existing bucket keeps its own, and workers
// follow it, so every worker beats at the same pace.
func WithTTL(d time.Duration) MembershipOption {
	return func(m *Membership) {
		if d > 0 {
			m.ttl = d
		}
	}
}

// WithExpectedMembers sets the fleet size the operator expects; it only
// matters when the bucket is unreachable (see StartMembership).
func WithExpectedMembers(n int) MembershipOption { return func(m *Membership) { m.expected = n } }

// WithMembershipLogger sets the logger (default slog.Default()).
func WithMembershipLogger(l *slog.Logger) MembershipOption { return func(m *Membership) { m.log = l } }

// Membership keeps this worker's heartbeat in the bucket for each of its
// pools (key "<pool>.<worker>", pool and worker escaped to key tokens),
// counts the live workers of each pool and sets each pool's share to the
// fleet limits divided by that count. It owns one goroutine, stopped by Stop
// or by the end of the context it was started with.
type Membership struct {
	kvm        jetstream.KeyValueManager
	worker     string
	pools      []*Pool
	bucketName string
	ttl        time.Duration
	expected   int
	log        *slog.Logger

	kv       jetstream.KeyValue // bound on first success; used by the goroutine only
	interval time.Duration
	lastSeen map[string]int         // live members per pool at the last good count
	degraded bool                   // the last round failed: shares are fallbacks
	hours    map[string]*hourWindow // 429s of the last hour per pool, for the heartbeats
	lastBeat time.Time              // start of the last round whose beats all landed

	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

// StartMembership joins the fleet for each pool and keeps the shares current
// until Stop or until ctx ends. It makes the first round before it returns,
// so the pools start with their real share. It fails only on bad arguments:
// an unreachable bucket is not fatal. Then each pool's divisor falls back to
// max(members last seen + 1, WithExpectedMembers, 2): one more than were
// last seen in case a worker joined unseen, never less than the fleet the
// operator expects, and never the whole limit, since other workers may well
// be running. A fallback is logged (warning) and shows as ShareFallback in
// each pool's Snapshot; the membership keeps trying and recovers by itself.
func StartMembership(ctx context.Context, kvm jetstream.KeyValueManager, workerID string, pools []*Pool, opts ...MembershipOption) (*Membership, error) {
	if kvm == nil {
		return nil, errors.New("ratelimit: membership needs a JetStream context")
	}
	if strings.TrimSpace(workerID) == "" {
		return nil, errors.New("ratelimit: membership needs a worker ID (unique per worker process, e.g. host name and process ID)")
	}
	if len(pools) == 0 {
		return nil, errors.New("ratelimit: membership needs at least one pool")
	}
	seen := map[string]bool{}
	for _, p := range pools {
		if seen[p.Name()] {
			return nil, fmt.Errorf("ratelimit: pool %q given twice to the membership; give each pool once", p.Name())
		}
		seen[p.Name()] = true
	}
	m := &Membership{
		kvm:        kvm,
		worker:     workerID,
		pools:      pools,
		bucketName: DefaultMembersBucket,
		ttl:        DefaultMembersTTL,
		log:        slog.Default(),
		lastSeen:   map[string]int{},
		hours:      map[string]*hourWindow{},
		done:       make(chan struct{}),
	}
	for _, o := range opts {
		o(m)
	}
	m.interval = m.ttl / 3
	ctx, m.cancel = context.WithCancel(ctx)
	m.round(ctx)
	go m.run(ctx)
	return m, nil
}

// Stop leaves the fleet: it stops the heartbeats and deletes this worker's
// keys so the others' shares grow at once (without waiting for the TTL). It
// waits for the goroutine to end and may be called more than once.
func (m *Membership) Stop() {
	m.stopOnce.Do(m.cancel)
	<-m.done
}

func (m *Membership) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.leave(context.WithoutCancel(ctx))
			return
		case <-t.C:
			m.round(ctx)
		}
	}
}

// leave deletes this worker's keys, best effort: if it cannot, the keys
// expire with the TTL anyway.
func (m *Membership) leave(ctx context.Context) {
	if m.kv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, p := range m.pools {
		if err := m.kv.Delete(ctx, m.key(p)); err != nil {
			m.log.Warn("ratelimit: could not remove heartbeat; it expires with the bucket TTL", "pool", p.Name(), "err", err)
		}
	}
}

// round beats once for every pool and updates their shares.
//
// The first good round, and the first after this worker's keys may have
// expired (no good round for a TTL), is a join: peers have not counted
// this worker yet, so each pool holds its calls for an interval and a
// fifth (see Pool.countMembers). By then every live peer has beaten and
// counted it.
func (m *Membership) round(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, m.interval)
	defer cancel()
	started := time.Now()
	err := m.bind(ctx)
	if err == nil {
		counts := make(map[string]int, len(m.pools))
		for _, p := range m.pools {
			n, cerr := m.beat(ctx, p)
			if cerr != nil {
				err = cerr
				break
			}
			counts[p.Name()] = n
		}
		if err == nil {
			if m.degraded {
				m.log.Info("ratelimit: membership bucket reachable again; fleet shares restored", "bucket", m.bucketName)
			}
			m.degraded = false
			var join time.Duration
			if m.lastBeat.IsZero() || !started.Before(m.lastBeat.Add(m.ttl)) {
				join = m.interval + m.interval/5
			}
			m.lastBeat = started
			for _, p := range m.pools {
				m.lastSeen[p.Name()] = counts[p.Name()]
				p.countMembers(counts[p.Name()], ShareFleet, join)
			}
			return
		}
	}
	if parent.Err() != nil {
		return // stopping, not failing
	}
	// Bind afresh next round: a restarted server may have lost the bucket
	// (memory storage) and bind creates it again.
	m.kv = nil
	if !m.degraded {
		m.log.Warn("ratelimit: membership bucket unreachable; using a conservative fallback share", "bucket", m.bucketName, "err", err)
	}
	m.degraded = true
	for _, p := range m.pools {
		p.countMembers(max(m.lastSeen[p.Name()]+1, m.expected, 2), ShareFallback, 0)
	}
}

// bind finds the bucket, creating it when absent, and takes the heartbeat
// interval from its actual TTL.
func (m *Membership) bind(ctx context.Context) error {
	if m.kv != nil {
		return nil
	}
	kv, err := m.kvm.KeyValue(ctx, m.bucketName)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// Memory storage: heartbeats are worthless after a server restart.
		kv, err = m.kvm.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: m.bucketName, TTL: m.ttl, History: 1, Storage: jetstream.MemoryStorage, Description: "extractq worker heartbeats per rate-limit pool"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = m.kvm.KeyValue(ctx, m.bucketName)
		}
	}
	if err != nil {
		return fmt.Errorf("open key-value bucket %s: %w", m.bucketName, err)
	}
	if st, err := kv.Status(ctx); err == nil && st.TTL() > 0 && st.TTL() != m.ttl {
		m.ttl, m.interval = st.TTL(), st.TTL()/3
	}
	m.kv = kv
	return nil
}

// beat refreshes this worker's key for p and counts the pool's live keys.
// Expired keys are gone from the bucket (age limit), deleted ones are
// skipped, so what remains is the live fleet.
func (m *Membership) beat(ctx context.Context, p *Pool) (int, error) {
	if m.hours[p.Name()] == nil {
		m.hours[p.Name()] = &hourWindow{}
	}
	val, _ := json.Marshal(heartbeatOf(m.worker, p, m.hours[p.Name()], time.Now()))
	if _, err := m.kv.Put(ctx, m.key(p), val); err != nil {
		return 0, fmt.Errorf("heartbeat for pool %s: %w", p.Name(), err)
	}
	w, err := m.kv.Watch(ctx, keyToken(p.Name())+".*", jetstream.MetaOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return 0, fmt.Errorf("list members of pool %s: %w", p.Name(), err)
	}
	defer w.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("list members of pool %s: %w", p.Name(), ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return 0, fmt.Errorf("list members of pool %s: watcher closed", p.Name())
			}
			if e == nil { // all current keys delivered
				return max(n, 1), nil
			}
			n++
		}
	}
}

func (m *Membership) key(p *Pool) string { return keyToken(p.Name()) + "." + keyToken(m.worker) }

// keyToken escapes s into one key token: letters, digits and '-' stay,
// every other byte becomes _XX (hex), so "ollama:llama3.1:8b" cannot split
// into several tokens or use a character keys forbid.
func keyToken(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}
