package document

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
)

// mailWith is an e-mail whose body is body and which attaches each
// name, content pair, base64-encoded.
func mailWith(body string, parts ...string) []byte {
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nTo: b@example.com\r\nSubject: invoice\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n")
	b.WriteString("--b0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n")
	for i := 0; i+1 < len(parts); i += 2 {
		b.WriteString("--b0\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"" + parts[i] + "\"\r\nContent-Transfer-Encoding: base64\r\n\r\n")
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(parts[i+1])) + "\r\n")
	}
	b.WriteString("--b0--\r\n")
	return []byte(b.String())
}

// TestLockedInlined: a PDF that opens only with the password is Locked
// where it is attached (an e-mail's file, a zip's, a zip's in an
// e-mail), its carrier is not; inlined into its carrier (Inline), the
// carrier is Locked too, since reading the carrier's original again
// without the password loses that part. A PDF that opens without the
// password locks nothing.
func TestLockedInlined(t *testing.T) {
	t.Parallel()
	locked, err := os.ReadFile("testdata/encrypted-secret.pdf")
	if err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadFile("testdata/encrypted-empty-user.pdf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		b          []byte
		locked     bool // Inline's result is Locked
	}{
		{"mail, locked PDF", "m.eml", mailWith("See attached.", "inv.pdf", string(locked)), true},
		{"mail, PDF with an empty user password", "m.eml", mailWith("See attached.", "inv.pdf", string(open)), false},
		{"zip, locked PDF", "a.zip", zipOf(t, "note.txt", "hello", "inv.pdf", string(locked)), true},
		{"mail, zip, locked PDF", "m.eml", mailWith("See attached.", "a.zip", string(zipOf(t, "inv.pdf", string(locked)))), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := ReadBytes(t.Context(), tc.b, Options{Name: tc.file, Password: "secret"})
			if err != nil {
				t.Fatal(err)
			}
			if doc.Locked {
				t.Errorf("the carrier is Locked: it opened without the password")
			}
			var lockedParts int
			var walk func(ds []*Document)
			walk = func(ds []*Document) {
				for _, c := range ds {
					if c.Err != nil {
						t.Errorf("attachment %s: %v", c.Name, c.Err)
					}
					if c.Locked {
						lockedParts++
					}
					walk(c.Attachments)
				}
			}
			walk(doc.Attachments)
			if want := map[bool]int{true: 1}[tc.locked]; lockedParts != want {
				t.Errorf("%d attachments Locked, want %d", lockedParts, want)
			}
			in := Inline(doc)
			if in.Locked != tc.locked {
				t.Errorf("inlined: Locked %v, want %v", in.Locked, tc.locked)
			}
			if tc.locked && doc.Locked {
				t.Errorf("Inline changed the document it was given")
			}
		})
	}
}
