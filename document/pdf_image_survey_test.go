package document

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/pdf"
)

// TestPDFImageSurvey counts the kinds of image a list of PDFs holds and
// how many of each decodeXObject decodes: a measure, not a check, run by
// hand with EXTRACTQ_PDF_LIST naming a file of PDF paths, one a line:
//
//	find /usr/share/doc -name '*.pdf' > /tmp/pdfs.txt
//	EXTRACTQ_PDF_LIST=/tmp/pdfs.txt go test -run TestPDFImageSurvey -v ./document/
func TestPDFImageSurvey(t *testing.T) {
	list := os.Getenv("EXTRACTQ_PDF_LIST")
	if list == "" {
		t.Skip("EXTRACTQ_PDF_LIST is not set")
	}
	lf, err := os.Open(list)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	type count struct{ all, ok int }
	kinds := map[string]*count{}
	failures := map[string]int{}
	sc := bufio.NewScanner(lf)
	for sc.Scan() {
		path := sc.Text()
		func() {
			defer func() { recover() }()
			f, r, err := pdf.Open(path)
			if err != nil {
				return
			}
			defer f.Close()
			seen := map[string]bool{}
			var walkRes func(res pdf.Value, depth int)
			walkRes = func(res pdf.Value, depth int) {
				xs := res.Key("XObject")
				for _, k := range xs.Keys() {
					x := xs.Key(k)
					id := fmt.Sprint(x.ObjectID())
					if seen[id] {
						continue
					}
					seen[id] = true
					switch x.Key("Subtype").Name() {
					case "Form":
						if depth < 4 {
							walkRes(x.Key("Resources"), depth+1)
						}
					case "Image":
						kind := imageKind(x)
						c := kinds[kind]
						if c == nil {
							c = &count{}
							kinds[kind] = c
						}
						c.all++
						err := func() (err error) {
							defer func() {
								if p := recover(); p != nil {
									err = fmt.Errorf("panic: %v", p)
								}
							}()
							_, _, err = decodeXObject(x)
							return err
						}()
						if err == nil {
							c.ok++
						} else {
							failures[kind+": "+err.Error()]++
						}
					}
				}
			}
			var walk func(n pdf.Value, depth int)
			walk = func(n pdf.Value, depth int) {
				if depth > 32 {
					return
				}
				walkRes(n.Key("Resources"), 0)
				kids := n.Key("Kids")
				for i := range kids.Len() {
					walk(kids.Index(i), depth+1)
				}
			}
			walk(r.Trailer().Key("Root").Key("Pages"), 0)
		}()
	}
	keys := make([]string, 0, len(kinds))
	all, ok := 0, 0
	for k, c := range kinds {
		keys = append(keys, k)
		all += c.all
		ok += c.ok
	}
	slices.SortFunc(keys, func(a, b string) int { return kinds[b].all - kinds[a].all })
	for _, k := range keys {
		t.Logf("%6d %6d  %s", kinds[k].all, kinds[k].ok, k)
	}
	t.Logf("images %d, decoded %d", all, ok)
	for k, n := range failures {
		if n > 1 || len(failures) < 40 {
			t.Logf("failed %d: %s", n, k)
		}
	}
}

// imageKind names an image XObject's filters, colour space, bits and
// Decode array.
func imageKind(x pdf.Value) string {
	var fs []string
	for _, f := range streamFilters(x) {
		fs = append(fs, strings.TrimSuffix(f.name, "Decode"))
	}
	cs := x.Key("ColorSpace")
	csName := cs.Name()
	if cs.Kind() == pdf.Array {
		csName = cs.Index(0).Name()
		switch csName {
		case "ICCBased":
			csName += fmt.Sprint(cs.Index(1).Key("N").Int64())
		case "Indexed":
			b := cs.Index(1)
			csName += "/" + b.Name() + b.Index(0).Name()
		}
	}
	if x.Key("ImageMask").Bool() {
		csName = "mask"
	}
	k := fmt.Sprintf("[%s] %s %d-bit", strings.Join(fs, " "), csName, x.Key("BitsPerComponent").Int64())
	if d := x.Key("Decode"); d.Kind() == pdf.Array {
		var ds []string
		for i := range d.Len() {
			ds = append(ds, fmt.Sprint(d.Index(i).Float64()))
		}
		k += " Decode[" + strings.Join(ds, " ") + "]"
	}
	return k
}
