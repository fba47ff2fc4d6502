package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// SchemaBody is what the EXTRACTQ_SCHEMAS bucket holds per fingerprint.
type SchemaBody struct {
	Name        string          `json:"name"`
	Version     int             `json:"version"`
	Fingerprint string          `json:"fingerprint"`
	Body        json.RawMessage `json:"body"`
}

// ErrSchemaNotFound is returned when no body is stored for a fingerprint.
var ErrSchemaNotFound = errors.New("schema not registered")

// Schemas stores schema bodies by fingerprint in the EXTRACTQ_SCHEMAS bucket.
type Schemas struct {
	js jetstream.JetStream
	mu sync.Mutex
	kv jetstream.KeyValue
}

// NewSchemas returns access to the schema bucket on js.
func NewSchemas(js jetstream.JetStream) *Schemas { return &Schemas{js: js} }

// schemaKey turns "sha256:abc" into a valid KV key.
func schemaKey(fingerprint string) string { return strings.ReplaceAll(fingerprint, ":", "_") }

func (s *Schemas) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := s.js.KeyValue(ctx, SchemaBucket)
	if err != nil {
		return nil, fmt.Errorf("open key-value bucket %s: %w (run `worker migrate` to create it)", SchemaBucket, err)
	}
	s.kv = kv
	return kv, nil
}

// Put stores a schema body. Storing the same fingerprint again is harmless.
func (s *Schemas) Put(ctx context.Context, b SchemaBody) error {
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode schema %s: %w", b.Name, err)
	}
	if _, err := kv.Put(ctx, schemaKey(b.Fingerprint), data); err != nil {
		return fmt.Errorf("store schema %s v%d in %s: %w", b.Name, b.Version, SchemaBucket, err)
	}
	return nil
}

// Get returns the body stored for fingerprint, or ErrSchemaNotFound.
func (s *Schemas) Get(ctx context.Context, fingerprint string) (*SchemaBody, error) {
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, schemaKey(fingerprint))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s (submit it again with `submit --schema FILE`)", ErrSchemaNotFound, fingerprint)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch schema %s from %s: %w", fingerprint, SchemaBucket, err)
	}
	var b SchemaBody
	if err := json.Unmarshal(e.Value(), &b); err != nil {
		return nil, fmt.Errorf("decode schema %s from %s: %w", fingerprint, SchemaBucket, err)
	}
	return &b, nil
}
