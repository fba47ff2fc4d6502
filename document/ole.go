package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
)

func init() {
	Register(Format{
		Name:       "ole",
		MediaType:  "application/x-ole-storage",
		Extensions: []string{".doc", ".xls", ".ppt", ".msg", ".docx", ".xlsx", ".pptx"},
		Version:    "1",
		Match:      func(head []byte, _ io.ReaderAt, _ int64) bool { return bytes.HasPrefix(head, oleMagic) },
		Priority:   90,
		Decoder:    DecoderFunc(decodeOLE),
	})
}

// ErrUnsupported: the format is recognised but extractq does not read it;
// the error says how to convert it.
var ErrUnsupported = errors.New("recognised but not read")

// oleMagic starts a Compound File (OLE2): legacy Office files, Outlook
// messages, and the wrapper Office puts around a password-protected
// DOCX, XLSX or PPTX.
var oleMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// oleStream reports whether the compound file holds a stream of that name:
// directory entries store names in UTF-16LE, so a byte search finds them
// without walking the sector chains.
func oleStream(b []byte, name string) bool {
	u := utf16.Encode([]rune(name))
	enc := make([]byte, 2*len(u))
	for i, c := range u {
		enc[2*i], enc[2*i+1] = byte(c), byte(c>>8)
	}
	return bytes.Contains(b, enc)
}

// decodeOLE names what the compound file is and why it cannot be read:
// a password (ErrEncrypted) or a legacy binary format (ErrUnsupported),
// each with the fix.
func decodeOLE(_ context.Context, r io.ReaderAt, size int64, _ *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	switch {
	case oleStream(b, "EncryptedPackage") || oleStream(b, "EncryptionInfo"):
		return nil, fmt.Errorf("%w: a password-protected Office file (DOCX, XLSX or PPTX in an encrypted package); save an unprotected copy (File > Info > Protect > remove the password) and submit that", ErrEncrypted)
	case oleStream(b, "__substg1.0_"):
		return nil, fmt.Errorf("%w: an Outlook .msg message; no maintained pure-Go reader exists, so save it as .eml (drag it out of Outlook, or convert with msgconvert) and submit that", ErrUnsupported)
	case oleStream(b, "WordDocument"):
		return nil, fmt.Errorf("%w: a Word 97-2003 .doc; convert it with libreoffice --headless --convert-to docx and submit the .docx", ErrUnsupported)
	case oleStream(b, "Workbook") || oleStream(b, "Book"):
		return nil, fmt.Errorf("%w: an Excel 97-2003 .xls; convert it with libreoffice --headless --convert-to xlsx and submit the .xlsx", ErrUnsupported)
	case oleStream(b, "PowerPoint Document"):
		return nil, fmt.Errorf("%w: a PowerPoint 97-2003 .ppt; convert it with libreoffice --headless --convert-to pptx and submit the .pptx", ErrUnsupported)
	}
	return nil, fmt.Errorf("%w: an OLE compound file of unknown kind; convert it to a modern format (PDF, DOCX, XLSX)", ErrUnsupported)
}
