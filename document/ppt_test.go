package document

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// pptSlides is what slides.ppt (LibreOffice's PowerPoint 97 export of
// slides.pptx) reads as: a page per slide in the show's order, the notes
// after "Notes:", the table's cells one block each (a .ppt table is a
// group of text boxes).
var pptSlides = []string{
	"Slide 1\n\nSupplier Review\n\nAda Lovelace",
	"Slide 2\n\nRevenue grew\n\nGlobex ordered 400 widgets\nInitech renewed the contract\n\nNotes:\nMention the late delivery penalty of 200 EUR.",
	"Slide 3\n\nNext steps\n\nSign the renewal before the end of April.\n\nNotes:\nAsk legal about clause seven.",
	"Slide 4\n\nPrices\n\nProduct\n\nPrice\n\nWidget\n\n100\n\nGadget\n\n50",
}

// TestLegacyPPT: a PowerPoint 97-2003 file, refused before, reads slide by
// slide through its persist directory, and by its slide containers in
// stream order when the "Current User" stream that leads to the directory
// is gone (then without the notes, which only the directory ties to
// their slides).
func TestLegacyPPT(t *testing.T) {
	t.Parallel()
	streams := oleStreams(t, "slides.ppt")
	var noUser []cfbtest.Stream
	for _, s := range streams {
		if s.Path != "Current User" {
			noUser = append(noUser, s)
		}
	}
	for name, b := range map[string][]byte{"slides.ppt": nil, "no-current-user.ppt": cfbtest.Build(noUser, cfbtest.Options{})} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var d *Document
			var err error
			if b == nil {
				d, err = ReadFile(t.Context(), filepath.Join("testdata", "formats", name), Options{})
			} else {
				d, err = ReadBytes(t.Context(), b, Options{Name: name})
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.MediaType != "application/vnd.ms-powerpoint" || len(d.Pages) != len(pptSlides) {
				t.Fatalf("%s, %d pages:\n%s", d.MediaType, len(d.Pages), d.Text)
			}
			for i, p := range d.Pages {
				want := pptSlides[i]
				if b != nil {
					want, _, _ = strings.Cut(want, "\n\nNotes:")
				}
				if got := d.Text[p.Start:p.End]; got != want {
					t.Errorf("slide %d:\n%q\nwant\n%q", i+1, got, want)
				}
			}
		})
	}
}

func TestPPTEncrypted(t *testing.T) {
	t.Parallel()
	b := cfbtest.Build([]cfbtest.Stream{{Path: "PowerPoint Document", Data: make([]byte, 64)}, {Path: "EncryptedSummary", Data: make([]byte, 64)}}, cfbtest.Options{})
	_, err := ReadBytes(t.Context(), b, Options{Name: "locked.ppt"})
	if !isErr(err, ErrEncrypted) || !strings.Contains(err.Error(), "without one") {
		t.Fatalf("got %v", err)
	}
}
