package document

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb"
)

func init() {
	Register(Format{
		Name:       "ole",
		MediaType:  "application/x-ole-storage",
		Extensions: []string{".doc", ".dot", ".msg", ".xls", ".ppt", ".docx", ".xlsx", ".pptx"},
		// 10: a password-protected DOCX, XLSX or PPTX (agile or
		// standard encryption) is read with Options.Password.
		// 9: an Outlook .msg's HTML body through html/5.
		// 8: an Outlook .msg's HTML body through html/4.
		// 7: the objects embedded in a Word .doc (ObjectPool), an Excel
		// .xls (MBD storages) or a PowerPoint .ppt (ExOleObjStg records),
		// a workbook pasted into a report, are child documents.
		// 6: a signed or encrypted Outlook .msg (IPM.Note.SMIME*) is read
		// through its smime.p7m: the signed message's body and
		// attachments, smime.p7m no attachment; encrypted is refused; a
		// large picture the HTML body shows inline is an attachment, a
		// small one (a logo) is left out.
		// 5: a .doc list item keeps its marker and text whole across a
		// page break inside it, or a section break ending it.
		// 4: a .doc's paragraphs are in lists through their styles too.
		// 3: a .doc's list items keep their markers. 2: Word .doc,
		// Outlook .msg, Excel .xls and PowerPoint .ppt (97-2003) are
		// read; 1 refused every compound file.
		Version:  oleVersion,
		Match:    func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, oleMagic) },
		Priority: 90,
		Decoder:  DecoderFunc(decodeOLE),
	})
}

// oleVersion is the "ole" reader's version, also given to attached
// messages read in place.
const oleVersion = "10"

// oleMagic starts a Compound File (OLE2): legacy Office files, Outlook
// messages, and the wrapper Office puts around a password-protected
// DOCX, XLSX or PPTX.
var oleMagic = cfb.Magic

// oleStream reports whether the bytes hold a directory entry name (in
// UTF-16LE): how a compound file too damaged to open is still told apart.
func oleStream(b []byte, name string) bool {
	u := utf16.Encode([]rune(name))
	enc := make([]byte, 2*len(u))
	for i, c := range u {
		enc[2*i], enc[2*i+1] = byte(c), byte(c>>8)
	}
	return bytes.Contains(b, enc)
}

// encryptedPackage is the error for an OOXML file behind a password.
var encryptedPackage = fmt.Errorf("%w: a password-protected Office file (DOCX, XLSX or PPTX in an encrypted package); pass its password (Options.Password), or save an unprotected copy (File > Info > Protect > remove the password) and submit that", ErrEncrypted)

// decodeOLE opens the compound file and reads it by what its streams say
// it is: a Word .doc, an Outlook .msg, an Excel .xls, a PowerPoint .ppt;
// a password-protected OOXML package is ErrEncrypted, and older versions
// (Word 6/95, Excel 5/95) and unknown kinds are ErrUnsupported, each with
// the fix.
func decodeOLE(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	lim := opts.Limits.withDefaults()
	f, err := cfb.Open(r, size, cfb.Limits{MaxRead: lim.MaxUnpacked})
	if err != nil {
		// A directory too damaged to walk may still name what it was.
		b := make([]byte, min(size, 1<<20))
		n, _ := r.ReadAt(b, 0)
		if oleStream(b[:n], "EncryptedPackage") || oleStream(b[:n], "EncryptionInfo") {
			return nil, encryptedPackage
		}
		return nil, cfbErr("the compound file", err)
	}
	has := func(name string) bool { _, ok := f.Lookup(name); return ok }
	hasPrefix := func(prefix string) bool {
		for _, e := range f.Children("") {
			if strings.HasPrefix(strings.ToLower(e.Name), strings.ToLower(prefix)) {
				return true
			}
		}
		return false
	}
	var doc *Document
	switch {
	case has("EncryptedPackage") && has("EncryptionInfo"):
		return readEncryptedPackage(ctx, f, opts)
	case has("EncryptedPackage") || has("EncryptionInfo"):
		return nil, encryptedPackage
	case has("WordDocument"):
		doc, err = decodeDOC(ctx, f, opts)
		if doc != nil {
			doc.MediaType = "application/msword"
		}
	case hasPrefix("__substg1.0_"):
		doc, err = decodeMSG(ctx, f, "", opts)
		if doc != nil {
			doc.MediaType = "application/vnd.ms-outlook"
		}
	case has("Workbook"):
		doc, err = decodeXLS(ctx, f, "Workbook", opts)
		if doc != nil {
			doc.MediaType = "application/vnd.ms-excel"
		}
	case has("Book"):
		return nil, fmt.Errorf("%w: an Excel 5/95 .xls; convert it with libreoffice --headless --convert-to xlsx and submit the .xlsx", ErrUnsupported)
	case has("PowerPoint Document"):
		doc, err = decodePPT(ctx, f, opts)
		if doc != nil {
			doc.MediaType = "application/vnd.ms-powerpoint"
		}
	default:
		return nil, fmt.Errorf("%w: an OLE compound file of unknown kind; convert it to a modern format (PDF, DOCX, XLSX)", ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	if doc.MediaType == "application/msword" || doc.MediaType == "application/vnd.ms-excel" {
		objects, err := embedded(readOLEObjects(ctx, f, oleObjectStorages(f, doc.MediaType == "application/msword"), opts))
		if err != nil {
			return nil, err
		}
		doc.Attachments = append(doc.Attachments, objects...)
	}
	return doc, nil
}

// cfbErr types a compound file error: the read budget is ErrTooLarge,
// anything else ErrCorrupt.
func cfbErr(what string, err error) error {
	switch {
	case errors.Is(err, cfb.ErrTooLarge):
		return fmt.Errorf("%w: %s: %w (Limits.MaxUnpacked)", ErrTooLarge, what, err)
	case errors.Is(err, cfb.ErrNotFound):
		return fmt.Errorf("%w: %s is missing: %w", ErrCorrupt, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, what, err)
}

// summaryInfo fills the metadata from the "\x05SummaryInformation"
// property set ([MS-OLEPS]) when there is one: title, subject, author,
// creation and modification times. A damaged set is ignored.
func summaryInfo(f *cfb.File, m *Metadata) {
	b, err := f.ReadStream("\x05SummaryInformation")
	if err != nil || len(b) < 48 {
		return
	}
	le := binary.LittleEndian
	off := int(le.Uint32(b[44:]))
	if off < 0 || off+8 > len(b) {
		return
	}
	sec := b[off:]
	n := int(le.Uint32(sec[4:]))
	codepage := 1252
	type prop struct {
		id  uint32
		off int
	}
	var props []prop
	for i := 0; i < n && 8+8*i+8 <= len(sec); i++ {
		props = append(props, prop{le.Uint32(sec[8+8*i:]), int(le.Uint32(sec[12+8*i:]))})
	}
	for _, p := range props {
		if p.id == 1 && p.off >= 0 && p.off+8 <= len(sec) && le.Uint32(sec[p.off:]) == 2 {
			codepage = int(int16(le.Uint16(sec[p.off+4:])))
		}
	}
	str := func(o int) string {
		if o < 0 || o+8 > len(sec) {
			return ""
		}
		typ, n := le.Uint32(sec[o:]), int(le.Uint32(sec[o+4:]))
		if n < 0 || o+8+n > len(sec) {
			return ""
		}
		v := sec[o+8 : o+8+n]
		switch {
		case typ == 0x1F: // VT_LPWSTR: n counts characters
			if o+8+2*n > len(sec) {
				return ""
			}
			return strings.TrimRight(decodeUTF16LE(sec[o+8:o+8+2*n]), "\x00")
		case typ != 0x1E:
			return ""
		case codepage == 1200:
			return strings.TrimRight(decodeUTF16LE(v), "\x00")
		case codepage == 65001:
			return strings.TrimRight(strings.ToValidUTF8(string(v), "\uFFFD"), "\x00")
		}
		return strings.TrimRight(transcode(v, "windows-1252"), "\x00")
	}
	filetime := func(o int) time.Time {
		if o < 0 || o+12 > len(sec) || le.Uint32(sec[o:]) != 0x40 {
			return time.Time{}
		}
		return filetimeToTime(le.Uint64(sec[o+4:]))
	}
	for _, p := range props {
		switch p.id {
		case 2:
			m.Title = str(p.off)
		case 3:
			m.Subject = str(p.off)
		case 4:
			m.Author = str(p.off)
		case 12:
			m.Created = filetime(p.off)
		case 13:
			m.Modified = filetime(p.off)
		}
	}
}

// filetimeToTime converts a Windows FILETIME (100 ns since 1601) to a
// time; zero and absurd values are the zero time.
func filetimeToTime(ft uint64) time.Time {
	if ft == 0 || ft > 0x7FFFFFFFFFFFFFFF {
		return time.Time{}
	}
	const epochDiff = 116444736000000000 // 1601-01-01 to 1970-01-01 in 100 ns
	if ft < epochDiff {
		return time.Time{}
	}
	d := ft - epochDiff
	t := time.Unix(int64(d/1e7), int64(d%1e7)*100).UTC()
	if t.Year() > 9999 {
		return time.Time{}
	}
	return t
}

// decodeUTF16LE decodes UTF-16LE bytes (an odd last byte is dropped).
func decodeUTF16LE(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}
