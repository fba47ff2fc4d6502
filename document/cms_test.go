package document_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// testdata returns the bytes of testdata/path.
func testdata(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestP7M reads signed files (testdata/smime/make-smime.sh, OpenSSL) as
// the file they hold, in DER, streamed BER and PEM, and names what cannot
// be read: an encrypted file, a detached signature.
func TestP7M(t *testing.T) {
	t.Parallel()
	want := string(testdata(t, "smime/"+"invoice.xml"))
	tests := []struct {
		file    string
		wantErr error
		msg     string
	}{
		{file: "invoice-der.xml.p7m"},
		{file: "invoice-ber.xml.p7m"},
		{file: "invoice-pem.xml.p7m"},
		{file: "encrypted.xml.p7m", wantErr: document.ErrUnsupported, msg: "decrypt it first"},
		{file: "invoice.xml.p7s", wantErr: document.ErrUnsupported, msg: "a detached signature"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), testdata(t, "smime/"+tc.file), document.Options{Name: tc.file})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %v saying %q", err, tc.wantErr, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Text != strings.TrimSpace(want) && doc.Text != want {
				t.Fatalf("text %q, want the signed invoice.xml", doc.Text)
			}
			if doc.Name != "" && doc.Name != strings.TrimSuffix(tc.file, ".p7m") {
				t.Errorf("named %q", doc.Name)
			}
		})
	}
}

// TestSMIME reads signed and encrypted e-mails: a signed message's body
// without its signature as an attachment, an opaquely signed message's
// body from inside its smime.p7m, an Italian e-invoice's .xml.p7m as the
// XML it wraps, and an encrypted message refused with what to do.
func TestSMIME(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file        string
		body        string   // in the text
		attachments []string // names, in order
		wantErr     string
	}{
		{file: "signed.eml", body: "Invoice INV-77 total 99.00 EUR"},
		{file: "opaque.eml", body: "Invoice INV-77 total 99.00 EUR"},
		{file: "fattura.eml", body: "Invoice attached.", attachments: []string{"IT01234567890_FPA01.xml"}},
		{file: "encrypted.eml", wantErr: "decrypt it first"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), testdata(t, "smime/"+tc.file), document.Options{})
			if tc.wantErr != "" {
				if !errors.Is(err, document.ErrUnsupported) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrUnsupported saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(doc.Text, tc.body) || strings.Contains(doc.Text, "Content-Type") {
				t.Errorf("text %q, want the body %q without MIME headers", doc.Text, tc.body)
			}
			var names []string
			for _, a := range doc.Attachments {
				names = append(names, a.Name)
				if a.Err != nil {
					t.Errorf("attachment %s: %v", a.Name, a.Err)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.attachments, ",") {
				t.Fatalf("attachments %q, want %q", names, tc.attachments)
			}
			for _, a := range doc.Attachments {
				if !strings.Contains(a.Text, "<ram:ID>INV-2026-0042</ram:ID>") {
					t.Errorf("attachment %s reads %q, want the signed XML", a.Name, a.Text)
				}
			}
		})
	}
}
