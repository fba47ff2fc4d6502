package worker

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/intake"
)

// TestWithOriginal checks what the original read again adds to the stored
// text and pages: pictures, sizes and unreadable reasons by page number;
// boxes and running headers only for a page whose text is the same,
// moved to the stored offsets; never its own text.
func TestWithOriginal(t *testing.T) {
	t.Parallel()
	pic := &document.Image{MediaType: "image/png", Data: []byte("png")}
	// The re-read: page 1 "Head. Alpha" with a header and two boxes, page 2
	// a scan, page 3 "Gamma" unreadable in part.
	reread := func() *document.Document {
		return &document.Document{Text: "Head. AlphaGamma", Format: "pdf", MediaType: "application/pdf", Name: "x.pdf",
			Pages: []document.Page{
				{Number: 1, Start: 0, End: 11, Width: 612, Height: 792, Header: document.Span{Start: 0, End: 5},
					Blocks: []document.Block{{Start: 0, End: 5, Box: document.Box{X1: 1}}, {Start: 6, End: 11, Box: document.Box{X1: 2}}}},
				{Number: 2, Start: 11, End: 11, Image: pic, Width: 595, Height: 842},
				{Number: 3, Start: 11, End: 16, Unreadable: "outlines", Blocks: []document.Block{{Start: 11, End: 16}}},
			}}
	}
	tests := []struct {
		name     string
		text     string
		pages    []document.Page // the envelope's
		reread   *document.Document
		want     []document.Page
		mismatch string // part of the reason, "" for none
	}{{
		name: "pages line up: boxes and header moved to the stored offsets, the picture kept",
		text: "Intro. Head. Alpha\n\nOCR textGamma",
		pages: []document.Page{
			{Number: 1, Start: 7, End: 18, Label: "i"}, {Number: 2, Start: 20, End: 28}, {Number: 3, Start: 28, End: 33}},
		reread: reread(),
		want: []document.Page{
			{Number: 1, Start: 7, End: 18, Label: "i", Width: 612, Height: 792, Header: document.Span{Start: 7, End: 12},
				Blocks: []document.Block{{Start: 7, End: 12, Box: document.Box{X1: 1}}, {Start: 13, End: 18, Box: document.Box{X1: 2}}}},
			{Number: 2, Start: 20, End: 28, Image: pic, Width: 595, Height: 842},
			{Number: 3, Start: 28, End: 33, Unreadable: "outlines", Blocks: []document.Block{{Start: 28, End: 33}}},
		},
	}, {
		name:   "a page's text differs (DropRunning at submit): its boxes are not the stored text's",
		text:   "AlphaGamma",
		pages:  []document.Page{{Number: 1, Start: 0, End: 5}, {Number: 2, Start: 5, End: 5}, {Number: 3, Start: 5, End: 10}},
		reread: reread(),
		want: []document.Page{
			{Number: 1, Start: 0, End: 5, Width: 612, Height: 792},
			{Number: 2, Start: 5, End: 5, Image: pic, Width: 595, Height: 842},
			{Number: 3, Start: 5, End: 10, Unreadable: "outlines", Blocks: []document.Block{{Start: 5, End: 10}}},
		},
	}, {
		name:     "fewer pages in the job: matched by number, the rest of the re-read left out",
		text:     "Zeta",
		pages:    []document.Page{{Number: 2, Start: 0, End: 4}},
		reread:   reread(),
		want:     []document.Page{{Number: 2, Start: 0, End: 4, Image: pic, Width: 595, Height: 842}},
		mismatch: "has 3 pages, the job 1",
	}, {
		name:     "more pages in the job: those the re-read lacks get nothing",
		text:     "abcdef",
		pages:    []document.Page{{Number: 2, Start: 0, End: 2}, {Number: 4, Start: 2, End: 4}, {Number: 5, Start: 4, End: 6}, {Number: 6, Start: 6, End: 6}},
		reread:   reread(),
		want:     []document.Page{{Number: 2, Start: 0, End: 2, Image: pic, Width: 595, Height: 842}, {Number: 4, Start: 2, End: 4}, {Number: 5, Start: 4, End: 6}, {Number: 6, Start: 6, End: 6}},
		mismatch: "has 3 pages, the job 4",
	}, {
		name:   "no pages in the job, the same text: the re-read's pages index it",
		text:   "Head. AlphaGamma",
		reread: reread(),
		want:   reread().Pages,
	}, {
		name:     "no pages in the job, another text: none rather than wrong ones",
		text:     "Head. Alpha and an attachment",
		reread:   reread(),
		mismatch: "has 3 pages, the job 0",
	}, {
		name:  "re-read pages out of its text: their boxes are not taken, no panic",
		text:  "abc",
		pages: []document.Page{{Number: 1, Start: 0, End: 3}},
		reread: &document.Document{Text: "ab", Pages: []document.Page{{Number: 1, Start: 1, End: 9, Image: pic,
			Blocks: []document.Block{{Start: 1, End: 9}}}}},
		want: []document.Page{{Number: 1, Start: 0, End: 3, Image: pic}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := &document.Document{Text: tt.text, Pages: tt.pages}
			mismatch := withOriginal(doc, tt.reread, false)
			if doc.Text != tt.text || doc.MediaType != tt.reread.MediaType || doc.Name != tt.reread.Name {
				t.Errorf("text %q, media type %q, name %q; want the stored text and the re-read's format", doc.Text, doc.MediaType, doc.Name)
			}
			if !reflect.DeepEqual(doc.Pages, tt.want) {
				t.Errorf("pages\n%+v\nwant\n%+v", doc.Pages, tt.want)
			}
			if tt.mismatch == "" && mismatch != "" || !strings.Contains(mismatch, tt.mismatch) {
				t.Errorf("mismatch %q, want %q", mismatch, tt.mismatch)
			}
		})
	}
}

// TestWithOriginalInlined checks an original whose attachments submit
// inlined, in a job that does not record it (submitted before the policy
// was recorded): the re-read inlined the same way, which has the job's
// page count, gives the pictures of the attachments' pages.
func TestWithOriginalInlined(t *testing.T) {
	t.Parallel()
	pic := &document.Image{MediaType: "image/png", Data: []byte("png")}
	reread := &document.Document{Text: "Body", Format: "eml", MediaType: "message/rfc822",
		Attachments: []*document.Document{{Name: "scan.pdf", Pages: []document.Page{{Number: 1, Image: pic}}}}}
	const text = "Body\n\n--- attachment scan.pdf ---\n\nOCR words"
	doc := &document.Document{Text: text, Pages: []document.Page{{Number: 1, Start: 35, End: len(text), Label: "scan.pdf"}}}
	if m := withOriginal(doc, reread, false); m != "" {
		t.Errorf("mismatch %q, want none", m)
	}
	if doc.Text != text || doc.Pages[0].Image != pic || doc.Pages[0].Start != 35 || doc.Pages[0].Label != "scan.pdf" {
		t.Errorf("document %+v; want the stored text and page with the attachment's picture", doc)
	}
}

// TestWithOriginalInlinedRecorded checks a job whose metadata records
// that submit inlined the attachments (intake.DocumentMetadata under
// intake.AttachInline), read again by a newer reader that finds an
// attachment the older one did not: the re-read inlined has a page more
// than the job, so the page count cannot say it was inlined, and only the
// record puts the attached scan's picture on the job's page 1 (its
// inlined page). A job recording nothing keeps the count heuristic.
func TestWithOriginalInlinedRecorded(t *testing.T) {
	t.Parallel()
	pic := &document.Image{MediaType: "image/png", Data: []byte("png")}
	// The mail has no pages of its own: a.pdf's scan is inlined page 1,
	// b.pdf (unread at submit) page 2.
	reread := func() *document.Document {
		return &document.Document{Text: "Body", Format: "eml", MediaType: "message/rfc822", Attachments: []*document.Document{
			{Name: "a.pdf", Pages: []document.Page{{Number: 1, Image: pic, Width: 612}}},
			{Name: "b.pdf", Text: "Later.", Pages: []document.Page{{Number: 1, Start: 0, End: 6}}},
		}}
	}
	const text = "Body\n\n--- attachment a.pdf ---\n\n"
	tests := []struct {
		name     string
		meta     json.RawMessage
		want     document.Page
		mismatch string // part of the reason
	}{{
		name:     "recorded inline: matched in the re-read inlined",
		meta:     intake.DocumentMetadata(&document.Document{Format: "eml"}, intake.AttachInline),
		want:     document.Page{Number: 1, Start: len(text), End: len(text), Label: "a.pdf", Image: pic, Width: 612},
		mismatch: "has 2 pages, the job 1",
	}, {
		name:     "recorded nothing: the counts differ inlined too, so page 1 is the carrier's, which has none",
		meta:     intake.DocumentMetadata(&document.Document{Format: "eml"}, intake.AttachSeparate),
		want:     document.Page{Number: 1, Start: len(text), End: len(text), Label: "a.pdf"},
		mismatch: "has 0 pages, the job 1",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := &document.Document{Text: text, Pages: []document.Page{{Number: 1, Start: len(text), End: len(text), Label: "a.pdf"}}}
			m := withOriginal(doc, reread(), intake.Inlined(tt.meta))
			if !strings.Contains(m, tt.mismatch) {
				t.Errorf("mismatch %q, want %q", m, tt.mismatch)
			}
			if doc.Text != text || !reflect.DeepEqual(doc.Pages, []document.Page{tt.want}) {
				t.Errorf("text %q, pages %+v; want the stored text and %+v", doc.Text, doc.Pages, tt.want)
			}
		})
	}
}
