package document_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

func utf16le(s string) []byte {
	b := []byte{0xFF, 0xFE}
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

func utf16be(s string) []byte {
	b := []byte{0xFE, 0xFF}
	for _, r := range s {
		b = append(b, byte(r>>8), byte(r))
	}
	return b
}

func utf32le(s string) []byte {
	b := []byte{0xFF, 0xFE, 0, 0}
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	return b
}

func utf32be(s string) []byte {
	b := []byte{0, 0, 0xFE, 0xFF}
	for _, r := range s {
		b = append(b, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
	}
	return b
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        []byte
		transcode bool
		want      string
		wantErr   error
		errHas    string
	}{
		{name: "utf-8", in: []byte("Invoice n° 42\ntotal 10 €\n"), want: "Invoice n° 42\ntotal 10 €\n"},
		{name: "utf-8 bom dropped", in: []byte("\xEF\xBB\xBFcafé"), want: "café"},
		{name: "utf-16le bom", in: utf16le("café €"), want: "café €"},
		{name: "utf-16be bom", in: utf16be("café €"), want: "café €"},
		{name: "utf-32le bom", in: utf32le("naïve 𝄞"), want: "naïve 𝄞"},
		{name: "utf-32be bom", in: utf32be("naïve 𝄞"), want: "naïve 𝄞"},
		{name: "windows-1252 refused", in: []byte("caf\xe9 \x80"), wantErr: document.ErrEncoding, errHas: "pass --transcode"},
		{name: "windows-1252 transcoded", in: []byte("caf\xe9 \x80"), transcode: true, want: "café €"},
		{name: "nul without bom is binary", in: []byte("h\x00i\x00"), wantErr: document.ErrUnknownFormat},
		{name: "nul after 8 KiB is binary", in: append([]byte(strings.Repeat("a", 9000)), 0), wantErr: document.ErrUnknownFormat, errHas: "offset 9000"},
		{name: "empty", in: nil, wantErr: document.ErrEmpty},
		{name: "blank", in: []byte(" \n\t\r\n"), wantErr: document.ErrEmpty},
		{name: "blank utf-16", in: utf16le("  \n"), wantErr: document.ErrEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := document.ReadBytes(t.Context(), tt.in, document.Options{Name: "in.txt", Transcode: tt.transcode})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				var de *document.Error
				if !errors.As(err, &de) || de.Name != "in.txt" {
					t.Errorf("err = %#v, want a *document.Error naming in.txt", err)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("err = %q, want it to contain %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Text != tt.want || doc.Format != "text" || doc.Reader.Name != "text" {
				t.Errorf("got %q as %s by %s, want %q as text", doc.Text, doc.Format, doc.Reader, tt.want)
			}
		})
	}
}

func TestTextForcedFormatStillRefusesBinary(t *testing.T) {
	t.Parallel()
	_, err := document.ReadBytes(t.Context(), []byte("\x89PNG\x00\x00"), document.Options{Format: "text"})
	if !errors.Is(err, document.ErrUnknownFormat) {
		t.Fatalf("err = %v, want ErrUnknownFormat", err)
	}
}
