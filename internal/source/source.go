// Package source lists documents kept away from the local disk — objects
// in an S3-compatible bucket, rows of a PostgreSQL query, a file listing
// URLs — as items whose bytes are fetched only when asked, so that a run
// that finds an object unchanged never reads it.
//
// A source only says what is there and fetches it; turning bytes into a
// document, watermarks and queueing belong to package ingest.
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Item is one document of a source, listed but not yet read.
type Item struct {
	// ID is the document id: the object's URI (s3://bucket/key), the
	// row's id column, or the URL.
	ID string
	// URI says where the item is, for messages and the audit's source.
	URI string
	// Size is the byte size when the listing tells it, else -1.
	Size int64
	// Version changes whenever the bytes do: an object's ETag, the SQL
	// watermark column. Empty when the source cannot tell without reading
	// the bytes (then a content hash stands in for it).
	Version string
	// Metadata is a JSON object, or nil.
	Metadata json.RawMessage
	// Position is where a resumed listing continues after this item (the
	// object key); empty for sources that cannot resume.
	Position string
	// Err, when set, rejects the item without fetching it (a NULL body).
	Err error

	fetch func(ctx context.Context, limit int64) ([]byte, error)
	open  func(ctx context.Context) (*Stream, error)
	name  string
}

// Name is the base name of the object's key or of the URL's path
// (batch-0001.jsonl.gz), "" for a row: what says how the bytes are read
// when their content cannot (JSON Lines, compressed or not).
func (it Item) Name() string { return it.name }

// Stream is an item's bytes as they arrive, for an item read piece by
// piece rather than held whole (a JSON Lines dump of many documents).
type Stream struct {
	io.ReadCloser
	// Version is what the server said of these bytes when it answered (an
	// ETag), "" when it said nothing.
	Version string
	// Size is their length when the server told it, else -1.
	Size int64
}

// Open starts reading the item's bytes. Its error, and the stream's, are
// that item's alone (as Fetch's): the rest go on.
func (it Item) Open(ctx context.Context) (*Stream, error) {
	if it.Err != nil {
		return nil, it.Err
	}
	if it.open == nil {
		return nil, fmt.Errorf("%w: %s cannot be streamed", ErrItem, it.URI)
	}
	return it.open(ctx)
}

// Fetch reads the item's bytes, at most limit+1 of them (so a caller sees
// that it is too large without holding it whole). Its error is that
// item's alone (the object was deleted since the listing, the URL answered
// 404): the rest go on.
func (it Item) Fetch(ctx context.Context, limit int64) ([]byte, error) {
	if it.Err != nil {
		return nil, it.Err
	}
	if it.fetch == nil {
		return nil, fmt.Errorf("%w: %s has no content", ErrItem, it.URI)
	}
	return it.fetch(ctx, limit)
}

// Source lists items.
type Source interface {
	// URI names the source (s3://bucket/prefix, sql:…, urls:FILE); an
	// incremental run's watermark is tied to it.
	URI() string
	// Check verifies access before anything is read or queued: the
	// bucket exists and may be listed, the query parses, the file opens.
	Check(ctx context.Context) error
	// List calls fn for every item, in a stable order, stopping at fn's
	// first error. A Resumable source starts after position after ("" is
	// the beginning); others ignore it.
	List(ctx context.Context, after string, fn func(Item) error) error
	// Resumable reports whether List honours after and lists every id
	// once (object keys are unique; query rows need not be).
	Resumable() bool
}

// Errors a caller branches on.
var (
	// ErrAccess: the source may not be read (no such bucket, access
	// denied, bad credentials, bad query). Nothing was listed.
	ErrAccess = errors.New("source not readable")
	// ErrUnavailable: the source's server could not be reached (network,
	// timeout, 5xx); try again once it answers.
	ErrUnavailable = errors.New("source unavailable")
	// ErrItem is matched by one item's error: the rest go on.
	ErrItem = errors.New("document not readable")
	// ErrUsage is matched by a malformed source argument.
	ErrUsage = errors.New("bad source")
)

// IsRemote reports whether a command-line input names a remote source
// (an s3:// URI) rather than a local path.
func IsRemote(arg string) bool { return strings.HasPrefix(arg, "s3://") }

// ListResuming lists src after position after and, when the listing fails
// part way (a *ListError: the server stopped answering mid-listing), lists
// again after the last item it gave, at most retries times, waiting
// backoff and then twice as long each time, so that nothing is listed
// twice. retried counts the listings resumed.
func ListResuming(ctx context.Context, src Source, after string, retries int, backoff time.Duration, fn func(Item) error) (retried int, err error) {
	for {
		err := src.List(ctx, after, fn)
		var le *ListError
		if !errors.As(err, &le) || !src.Resumable() || retried >= retries || ctx.Err() != nil {
			return retried, err
		}
		retried++
		after = le.After
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return retried, context.Cause(ctx)
		}
		backoff *= 2
	}
}
