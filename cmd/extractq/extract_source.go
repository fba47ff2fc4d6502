package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/internal/source"
	"github.com/extractq/extractq/internal/source/sourcecli"
)

// listRetries is how many times a listing that breaks part way is resumed
// after its last key (as submit does) before the run stops with exit 3.
const listRetries = 5

// listRemote lists src and hands each document to take, to be fetched and
// read there (lazily, on one of the run's bounded goroutines). A document
// whose id already has a final line (done, --resume) is skipped without
// being fetched; skip counts it. A listing that breaks part way resumes
// after its last key (listRetries times). The listing is counted into the
// progress display as it goes. An id seen twice in a source whose ids may
// repeat (a query, a URL list) is rejected the second time, as submit does
// (so such a source's ids are held in memory).
func listRemote(ctx context.Context, src source.Source, r *intake.Reader, done map[string]bool, bar *cli.Progress, skip func(), take func(func(context.Context) []intake.Doc)) error {
	var seen map[string]string // id → where it was first seen
	if !src.Resumable() {
		seen = map[string]string{}
	}
	n := 0
	_, err := source.ListResuming(ctx, src, "", listRetries, time.Second, func(it source.Item) error {
		if done[it.ID] {
			skip()
			return nil
		}
		n++
		bar.SetTotal(n, false)
		if seen != nil {
			if first, ok := seen[it.ID]; ok {
				dup := intake.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: id %s appears twice in the source (first at %s): give every document its own id", intake.ErrBadInput, it.ID, first)}
				take(func(context.Context) []intake.Doc { return []intake.Doc{dup} })
				return nil
			}
			seen[it.ID] = it.URI
		}
		if it.Err == nil && intake.IsJSONL(it.Name()) {
			// Its lines are the documents: counted, skipped by --resume
			// and taken one by one as a local JSONL file's are.
			n--
			return remoteJSONL(ctx, r, it, func(d intake.Doc) {
				if done[d.ID] {
					skip()
					return
				}
				n++
				bar.SetTotal(n, false)
				take(func(context.Context) []intake.Doc { return []intake.Doc{d} })
			})
		}
		take(func(ctx context.Context) []intake.Doc { return remoteDocs(ctx, r, it) })
		return nil
	})
	if err == nil {
		bar.SetTotal(n, true)
	}
	return err
}

// remoteDocs fetches one listed document and reads it exactly as a local
// file is read (its format recognised by content, attachments as
// --attachments says). A document that cannot be fetched is its own bad
// input: the rest go on.
func remoteDocs(ctx context.Context, r *intake.Reader, it source.Item) []intake.Doc {
	bad := func(err error) []intake.Doc {
		return []intake.Doc{{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: %w", intake.ErrBadInput, err)}}
	}
	if r.MaxDocument > 0 && it.Size > r.MaxDocument { // known from the listing: not read
		return bad(fmt.Errorf("document too large: %d bytes, the limit is %d (raise --max-document, or split the document)", it.Size, r.MaxDocument))
	}
	limit := r.MaxDocument
	if limit <= 0 {
		limit = intake.DefaultMaxDocument
	}
	b, err := it.Fetch(ctx, limit)
	if err != nil {
		return bad(err)
	}
	var docs []intake.Doc
	if err := r.ReadBytes(ctx, it.ID, it.URI, b, func(d intake.Doc) error {
		docs = append(docs, d)
		return nil
	}); err != nil && len(docs) == 0 { // the run stopped while it was read
		return bad(err)
	}
	return docs
}

// remoteJSONL reads a JSON Lines object (by its name) a line at a time,
// as a local file of that name is read, handing each line's document to
// fn as it is read: a dump is never held whole. An object that cannot be
// opened is one bad input; the error is ctx's alone.
func remoteJSONL(ctx context.Context, r *intake.Reader, it source.Item, fn func(intake.Doc)) error {
	st, err := it.Open(ctx)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		fn(intake.Doc{ID: it.ID, Source: it.URI, Err: fmt.Errorf("%w: %w", intake.ErrBadInput, err)})
		return nil
	}
	defer st.Close()
	return r.ReadJSONL(ctx, st, it.Name(), it.URI, func(d intake.Doc) error {
		fn(d)
		return nil
	})
}

// sourceError gives a remote source's error its exit code, as submit does;
// any other error of a listing is bad usage.
func sourceError(err error) error {
	err = sourcecli.Error(err, "add --resume (with --out) to skip the documents already written")
	var coded *cli.ExitError
	if errors.As(err, &coded) {
		return err
	}
	return cli.Usage(err)
}
