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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
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
	ID string
	// Hash is the document's identity, sha256 hex: of its original bytes
	// for a document a reader made from one (what its jobs and results are
	// keyed by); empty, or not a sha256, stands for the text's hash, which
	// PutDocuments then computes.
	Hash     string
	Source   string          // where it came from, e.g. a path or URL
	Metadata json.RawMessage // any JSON object; nil means {}
	Text     string
	// Pages are the byte ranges of Text that are its pages, in order; nil
	// for a document without pages. Kept so that a re-read can say which
	// pages changed.
	Pages []PageRange
}

// PageRange is one page's byte range [Start, End) of a document's text.
type PageRange [2]int

// HashText is the content hash documents and records use: sha256, hex.
func HashText(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// putChunk bounds one statement's parameters (and its memory).
const putChunk = 1000

// DocumentErrors is PutDocuments' error when some documents could not be
// stored: Errs maps their index in the argument to the reason. Every
// other document was stored.
type DocumentErrors struct {
	Errs map[int]error
}

func (e *DocumentErrors) Error() string {
	first := -1
	for i := range e.Errs {
		if first < 0 || i < first {
			first = i
		}
	}
	return fmt.Sprintf("audit: %d documents not stored (the others were), first: %v", len(e.Errs), e.Errs[first])
}

// Unwrap returns the reasons, so errors.Is(err, ErrBadDocument) matches.
func (e *DocumentErrors) Unwrap() []error {
	out := make([]error, 0, len(e.Errs))
	for _, err := range e.Errs {
		out = append(out, err)
	}
	return out
}

// PutDocuments stores docs in bulk: a new id is inserted, a known id with a
// new identity or text replaces it (the earlier text is kept in
// document_versions), a known id with the same identity and text is left
// alone. The content hash is Document.Hash when it is a sha256 (an
// original's), else the text's, computed by the database.
//
// One bad document never rejects the others: documents that fail
// CheckDocumentID, CheckText or CheckMetadata are not sent, and a chunk the
// database still refuses for a row's data is retried in halves down to the
// refused rows. Those are reported in a *DocumentErrors, the rest stored;
// any other error (the database is unreachable) means nothing may be
// stored.
func (s *Store) PutDocuments(ctx context.Context, docs []Document) error {
	idx, bad := checkDocuments(docs)
	for len(idx) > 0 {
		chunk := idx[:min(putChunk, len(idx))]
		idx = idx[len(chunk):]
		if err := s.putSplit(ctx, docs, chunk, bad); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return &DocumentErrors{Errs: bad}
	}
	return nil
}

// checkDocuments returns the indexes of the documents of docs to send
// and the errors of those that fail CheckDocumentID, CheckText or
// CheckMetadata.
func checkDocuments(docs []Document) (idx []int, bad map[int]error) {
	bad, idx = map[int]error{}, make([]int, 0, len(docs))
	for i := range docs {
		d := &docs[i]
		err := CheckDocumentID(d.ID)
		if err == nil {
			err = CheckText(d.Text)
		}
		if err == nil {
			err = CheckMetadata(d.Metadata)
		}
		if err != nil {
			bad[i] = fmt.Errorf("audit: document %.80q: %w", d.ID, err)
			continue
		}
		idx = append(idx, i)
	}
	return idx, bad
}

// putSplit stores docs[idx...]; on a row-level data error it retries each
// half, so only refused rows end in bad.
func (s *Store) putSplit(ctx context.Context, docs []Document, idx []int, bad map[int]error) error {
	err := s.putDocuments(ctx, docs, idx)
	if isCardinalityViolation(err) && len(idx) > 1 {
		// The same id twice in one statement: store the halves in order,
		// so the later text wins and the earlier one is kept as a version.
		if err := s.putSplit(ctx, docs, idx[:len(idx)/2], bad); err != nil {
			return err
		}
		return s.putSplit(ctx, docs, idx[len(idx)/2:], bad)
	}
	if err == nil || !isRowError(err) {
		if err != nil {
			return fmt.Errorf("audit: put %d documents: %w", len(idx), err)
		}
		return nil
	}
	if len(idx) == 1 {
		bad[idx[0]] = fmt.Errorf("audit: document %.80q: %w: %w", docs[idx[0]].ID, ErrBadDocument, err)
		return nil
	}
	half := len(idx) / 2
	if err := s.putSplit(ctx, docs, idx[:half], bad); err != nil {
		return err
	}
	return s.putSplit(ctx, docs, idx[half:], bad)
}

// putDocumentsSQL stores a chunk of documents (migration 17).
const putDocumentsSQL = "SELECT extractq_put_documents($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::jsonb[])"

// putDocumentsStmt names putDocumentsSQL prepared on a connection.
const putDocumentsStmt = "extractq_put_documents"

// putDocuments stores docs[idx...]. The six arrays are encoded by
// putArrays into one buffer and sent as they are, on the statement
// prepared once per connection: pgx would box each of the documents'
// strings into an interface and grow its parameter buffer from 256 bytes
// for every chunk, about a tenth of submit's allocations. The bytes sent
// are pgx's (TestPutArraysEncodeLikePgx); when the statement cannot be
// prepared with the parameter types encoded here, pgx sends them
// (putDocumentsPgx), and says what is wrong.
func (s *Store) putDocuments(ctx context.Context, docs []Document, idx []int) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return putDocumentsOn(ctx, c, docs, idx)
}

// putDocumentsOn is putDocuments on the connection c.
func putDocumentsOn(ctx context.Context, c *pgxpool.Conn, docs []Document, idx []int) error {
	if !preparedAs(ctx, c.Conn(), putDocumentsStmt, putDocumentsSQL, putDocumentsOIDs) {
		return putDocumentsPgx(ctx, c, docs, idx)
	}
	a := getPutArrays()
	defer a.release()
	params := a.encode(docs, idx)
	_, err := c.Conn().PgConn().ExecPrepared(ctx, putDocumentsStmt, params, putArraysFormats[:], nil).Close()
	return err
}

// putDocumentsPgx is putDocuments with pgx encoding the arguments.
func putDocumentsPgx(ctx context.Context, c interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, docs []Document, idx []int) error {
	ids, sources, metas, texts, hashes, pages := putColumns(docs, idx)
	_, err := c.Exec(ctx, putDocumentsSQL, strArray(ids), strArray(sources), metas, strArray(texts), strArray(hashes), pages)
	return err
}

// putColumns are the arguments of putDocumentsSQL for docs[idx...].
func putColumns(docs []Document, idx []int) (ids, sources, metas, texts, hashes []string, pages []*string) {
	n := len(idx)
	ids, sources, metas, texts, hashes = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	pages = make([]*string, n)
	for k, i := range idx {
		d := &docs[i]
		ids[k], sources[k], texts[k], metas[k], hashes[k] = d.ID, d.Source, d.Text, documentMetadata(d), d.Hash
		if d.Pages != nil {
			b, _ := json.Marshal(d.Pages) // integers only: never fails
			pages[k] = new(string(b))
		}
	}
	return ids, sources, metas, texts, hashes, pages
}

// documentMetadata is the metadata stored for d: "{}" for none.
func documentMetadata(d *Document) string {
	if len(d.Metadata) > 0 && string(d.Metadata) != "null" {
		return string(d.Metadata)
	}
	return "{}"
}

// PutDocument stores one document (see PutDocuments).
func (s *Store) PutDocument(ctx context.Context, d Document) error {
	return s.PutDocuments(ctx, []Document{d})
}

// Document returns a stored document; the error matches ErrNotFound when
// there is none.
func (s *Store) Document(ctx context.Context, id string) (*Document, error) {
	var d Document
	var meta, pages []byte
	err := s.pool.QueryRow(ctx, "SELECT id, content_hash, source, metadata, body, pages FROM documents WHERE id = $1", id).
		Scan(&d.ID, &d.Hash, &d.Source, &meta, &d.Text, &pages)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("audit: document %q is not stored: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read document %q: %w", id, err)
	}
	d.Metadata = meta
	if len(pages) > 0 {
		if err := json.Unmarshal(pages, &d.Pages); err != nil {
			return nil, fmt.Errorf("audit: pages of document %q: %w", id, err)
		}
	}
	return &d, nil
}

// DocumentVersion returns the text document id had when its content hash
// was hash: its current text, or an earlier one kept when a submit
// replaced it. The current text comes with its pages (when they were
// recorded); an earlier one has none. The error matches ErrNotFound when
// neither is stored.
func (s *Store) DocumentVersion(ctx context.Context, id, hash string) (*Document, error) {
	var d Document
	var meta, pages []byte
	err := s.pool.QueryRow(ctx, `SELECT id, content_hash, source, metadata, body, pages FROM documents WHERE id = $1 AND content_hash = $2
		UNION ALL
		SELECT v.document_id, v.content_hash, coalesce(d.source, ''), coalesce(d.metadata, '{}'), v.body, NULL::jsonb
		FROM document_versions v LEFT JOIN documents d ON d.id = v.document_id
		WHERE v.document_id = $1 AND v.content_hash = $2
		LIMIT 1`, id, hash).Scan(&d.ID, &d.Hash, &d.Source, &meta, &d.Text, &pages)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("audit: document %q with sha256 %.12s… is not stored: %w", id, hash, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read document %q: %w", id, err)
	}
	d.Metadata = meta
	if len(pages) > 0 {
		if err := json.Unmarshal(pages, &d.Pages); err != nil {
			return nil, fmt.Errorf("audit: pages of document %q: %w", id, err)
		}
	}
	return &d, nil
}

// isCardinalityViolation reports whether an upsert met one key twice
// ("ON CONFLICT DO UPDATE command cannot affect row a second time").
func isCardinalityViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "21000"
}
