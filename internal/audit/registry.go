package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotFound matches errors for a schema or document that is not stored.
var ErrNotFound = errors.New("not found")

// SchemaInfo is one registered version of a named schema.
type SchemaInfo struct {
	Name        string
	Version     int
	Fingerprint string
	Body        json.RawMessage // the schema as JSON
	CreatedAt   time.Time
}

// RegisterSchema stores body under name. The same fingerprint returns the
// existing version (created false); a new fingerprint becomes the next
// version. Older versions are kept.
func (s *Store) RegisterSchema(ctx context.Context, name string, body []byte, fingerprint string) (version int, created bool, err error) {
	if name == "" || fingerprint == "" {
		return 0, false, errors.New("audit: register schema: name and fingerprint are required")
	}
	if !json.Valid(body) {
		return 0, false, fmt.Errorf("audit: register schema %q: body is not JSON (pass the compiled schema's JSON())", name)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Serialise registrations of one name so two new fingerprints do not
		// race for the same version number.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('extractq.schema:' || $1, 0))", name); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, "SELECT version FROM schemas WHERE name = $1 AND fingerprint = $2", name, fingerprint).Scan(&version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		created = true
		return tx.QueryRow(ctx, `INSERT INTO schemas (name, version, fingerprint, body)
			SELECT $1, coalesce(max(version), 0) + 1, $2, $3 FROM schemas WHERE name = $1
			RETURNING version`, name, fingerprint, string(body)).Scan(&version)
	})
	if err != nil {
		return 0, false, fmt.Errorf("audit: register schema %q: %w", name, err)
	}
	return version, created, nil
}

const schemaCols = "name, version, fingerprint, body, created_at"

func scanSchema(row pgx.Row) (*SchemaInfo, error) {
	var si SchemaInfo
	var body []byte
	if err := row.Scan(&si.Name, &si.Version, &si.Fingerprint, &body, &si.CreatedAt); err != nil {
		return nil, err
	}
	si.Body = body
	return &si, nil
}

// SchemaByName returns version of the named schema; version 0 means the
// latest. The error matches ErrNotFound when there is none.
func (s *Store) SchemaByName(ctx context.Context, name string, version int) (*SchemaInfo, error) {
	si, err := scanSchema(s.pool.QueryRow(ctx, "SELECT "+schemaCols+` FROM schemas
		WHERE name = $1 AND ($2 = 0 OR version = $2) ORDER BY version DESC LIMIT 1`, name, version))
	if errors.Is(err, pgx.ErrNoRows) {
		if version == 0 {
			return nil, fmt.Errorf("audit: schema %q is not registered (submit with it first): %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("audit: schema %q has no version %d (list versions with `extractq status`): %w", name, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read schema %q: %w", name, err)
	}
	return si, nil
}

// SchemaByFingerprint returns the most recent registration of fingerprint
// under any name; the error matches ErrNotFound when there is none.
func (s *Store) SchemaByFingerprint(ctx context.Context, fingerprint string) (*SchemaInfo, error) {
	si, err := scanSchema(s.pool.QueryRow(ctx, "SELECT "+schemaCols+` FROM schemas
		WHERE fingerprint = $1 ORDER BY created_at DESC LIMIT 1`, fingerprint))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("audit: no schema with fingerprint %s: %w", fingerprint, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read schema %s: %w", fingerprint, err)
	}
	return si, nil
}

// Schemas lists every registered version, by name then version (bodies
// included).
func (s *Store) Schemas(ctx context.Context) ([]SchemaInfo, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+schemaCols+" FROM schemas ORDER BY name, version")
	if err != nil {
		return nil, fmt.Errorf("audit: list schemas: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SchemaInfo, error) {
		si, err := scanSchema(r)
		if err != nil {
			return SchemaInfo{}, err
		}
		return *si, nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: list schemas: %w", err)
	}
	return out, nil
}

// Document is a submitted document, kept so it can be resubmitted without
// the original file.
type Document struct {
	ID       string
	Hash     string          // sha256 of Text, hex; computed when empty
	Source   string          // where it came from, e.g. a path or URL
	Metadata json.RawMessage // any JSON object; nil means {}
	Text     string
}

// HashText is the content hash documents and records use: sha256, hex.
func HashText(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// putChunk bounds one statement's parameters (and its memory).
const putChunk = 1000

// PutDocuments stores docs in bulk: a new id is inserted, a known id with
// a new hash is replaced, a known id with the same hash is left alone.
func (s *Store) PutDocuments(ctx context.Context, docs []Document) error {
	for len(docs) > 0 {
		chunk := docs[:min(putChunk, len(docs))]
		docs = docs[len(chunk):]
		n := len(chunk)
		ids, hashes, sources, metas, texts := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		for i, d := range chunk {
			if d.ID == "" {
				return errors.New("audit: put documents: a document has an empty ID")
			}
			ids[i], sources[i], texts[i] = d.ID, d.Source, d.Text
			hashes[i] = d.Hash
			if hashes[i] == "" {
				hashes[i] = HashText(d.Text)
			}
			metas[i] = "{}"
			if len(d.Metadata) > 0 {
				if !json.Valid(d.Metadata) {
					return fmt.Errorf("audit: put documents: metadata of %q is not JSON", d.ID)
				}
				metas[i] = string(d.Metadata)
			}
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO documents (id, content_hash, source, metadata, body)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::text[])
			ON CONFLICT (id) DO UPDATE SET content_hash = excluded.content_hash, source = excluded.source,
			    metadata = excluded.metadata, body = excluded.body, updated_at = now()
			WHERE documents.content_hash <> excluded.content_hash`, ids, hashes, sources, metas, texts)
		if err != nil {
			return fmt.Errorf("audit: put %d documents: %w", n, err)
		}
	}
	return nil
}

// PutDocument stores one document (see PutDocuments).
func (s *Store) PutDocument(ctx context.Context, d Document) error {
	return s.PutDocuments(ctx, []Document{d})
}

// Document returns a stored document; the error matches ErrNotFound when
// there is none.
func (s *Store) Document(ctx context.Context, id string) (*Document, error) {
	var d Document
	var meta []byte
	err := s.pool.QueryRow(ctx, "SELECT id, content_hash, source, metadata, body FROM documents WHERE id = $1", id).
		Scan(&d.ID, &d.Hash, &d.Source, &meta, &d.Text)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("audit: document %q is not stored: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read document %q: %w", id, err)
	}
	d.Metadata = meta
	return &d, nil
}
