package document

import (
	"encoding/binary"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// TestLegacyXLS: Excel 97-2003 workbooks, refused before, read as the
// xlsx reader reads the same sheets: sheet.xls (from sheet.fods) gives
// sheetText; ledger.xls (from ledger.csv, 160 rows of Latin, Greek and
// Cyrillic text) has a shared string table spread over two CONTINUE
// records with a string split across them, and must give every row of
// its CSV.
func TestLegacyXLS(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "sheet.xls"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.MediaType != "application/vnd.ms-excel" || len(d.Pages) != 2 || d.Pages[0].Label != "Invoices" || d.Pages[1].Label != "Customers" {
		t.Errorf("sheet.xls: %s pages %+v", d.MediaType, d.Pages)
	}
	for _, w := range sheetText {
		if !strings.Contains(d.Text, w) {
			t.Errorf("sheet.xls lacks %q:\n%s", w, d.Text)
		}
	}
	d, err = ReadFile(t.Context(), filepath.Join("testdata", "formats", "ledger.xls"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", "formats", "ledger.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("Sheet: ledger\n")
	for i, r := range rows {
		for j, c := range r {
			if v, err := strconv.ParseFloat(c, 64); err == nil {
				r[j] = generalNumber(v)
			}
		}
		fmt.Fprintf(&want, "A%d: %s\n", i+1, strings.Join(r, " | "))
	}
	if got := d.Text + "\n"; got != want.String() {
		gl, wl := strings.Split(got, "\n"), strings.Split(want.String(), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

// TestSSTContinue: the split-string rule. A string whose characters run
// past its record goes on after a new flags byte that may change the
// width; counts and rich-text runs continue in the next record's bytes
// without one.
func TestSSTContinue(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	hdr := make([]byte, 8)
	le.PutUint32(hdr, 3)
	le.PutUint32(hdr[4:], 3)
	// "abcαβγ": 6 characters, 8-bit in the first record, UTF-16 after the
	// continuation's flags byte.
	s1 := append(append(hdr, 6, 0, 0), "abc"...)
	c1 := []byte{1}
	for _, r := range "αβγ" {
		c1 = le.AppendUint16(c1, uint16(r))
	}
	// "rich" with one formatting run whose 4 bytes straddle two records,
	// then a plain string whose header starts a record.
	c1 = append(c1, 4, 0, 0x08, 1, 0)
	c1 = append(c1, "rich"...)
	c1 = append(c1, 0, 0)
	c2 := []byte{0, 0, 2, 0, 0}
	c2 = append(c2, "ok"...)
	got, err := readSST([][]byte{s1, c1, c2}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[abcαβγ rich ok]" {
		t.Errorf("got %q", got)
	}
}

func TestRKNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rk   uint32
		want float64
	}{
		{uint32(1234)<<2 | 2, 1234},
		{uint32(1234)<<2 | 3, 12.34},
		{0xFFFFFFEC | 2, -5},    // -5 << 2
		{uint32(0x3FF00000), 1}, // the high half of 1.0
		{uint32(0x3FF00000) | 1, 0.01},
	}
	for _, tc := range tests {
		if got := rkNumber(tc.rk); got != tc.want {
			t.Errorf("rk %#x: %v, want %v", tc.rk, got, tc.want)
		}
	}
}

// biff writes BIFF records.
func biff(recs ...any) []byte {
	var b []byte
	for i := 0; i+1 < len(recs); i += 2 {
		data := recs[i+1].([]byte)
		b = binary.LittleEndian.AppendUint16(b, uint16(recs[i].(int)))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(data)))
		b = append(b, data...)
	}
	return b
}

func TestXLSRefusals(t *testing.T) {
	t.Parallel()
	bof := func(v uint16) []byte {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint16(b, v)
		binary.LittleEndian.PutUint16(b[2:], 5)
		return b
	}
	wb := func(stream string, data []byte) []byte {
		return cfbtest.Build([]cfbtest.Stream{{Path: stream, Data: data}}, cfbtest.Options{})
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"locked.xls", wb("Workbook", biff(biffBOF, bof(0x0600), biffFilePass, make([]byte, 54), biffEOF, []byte{})), ErrEncrypted},
		{"excel95.xls", wb("Workbook", biff(biffBOF, bof(0x0500), biffEOF, []byte{})), ErrUnsupported},
		{"excel5.xls", wb("Book", biff(biffBOF, bof(0x0500), biffEOF, []byte{})), ErrUnsupported},
		{"nobof.xls", wb("Workbook", biff(biffEOF, []byte{})), ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadBytes(t.Context(), tc.in, Options{Name: tc.name})
			if !isErr(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}
