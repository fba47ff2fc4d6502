package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/llm"
)

func TestInputFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		flags InputFlags
		env   map[string]string
		msg   string // a usage error saying this; "" for none
		check func(t *testing.T, f *InputFlags, r *intake.Reader, in extractq.Input)
	}{
		{name: "unknown format", flags: InputFlags{Format: "nope"}, msg: `--format "nope": not a format extractq reads; use one of: `},
		{name: "bad input", flags: InputFlags{Input: "pictures"}, msg: "--input \"pictures\": want auto, text or native"},
		{name: "bad attachments", flags: InputFlags{Attachments: "all"}, msg: "--attachments \"all\""},
		{name: "bad ocr", flags: InputFlags{OCR: "always"}, msg: "--ocr \"always\": want auto or off"},
		{name: "password from the environment", flags: InputFlags{OCR: "off"}, env: map[string]string{PasswordEnv: "s3cret"}, check: func(t *testing.T, _ *InputFlags, r *intake.Reader, _ extractq.Input) {
			if r.Password != "s3cret" {
				t.Errorf("password %q, want the environment's", r.Password)
			}
		}},
		{name: "a model that reads images sees the scans", flags: InputFlags{OCR: "auto"}, check: func(t *testing.T, f *InputFlags, r *intake.Reader, in extractq.Input) {
			f.ForModel(r, in, llm.Capabilities{Images: true, PDF: true})
			if !r.Native || r.OCR != nil {
				t.Errorf("native %v, OCR %v: want the pictures to the model and no OCR", r.Native, r.OCR)
			}
		}},
		{name: "input text never shows pictures", flags: InputFlags{Input: "text", OCR: "off"}, check: func(t *testing.T, f *InputFlags, r *intake.Reader, in extractq.Input) {
			f.ForModel(r, in, llm.Capabilities{Images: true, PDF: true})
			if r.Native || r.OCR != nil || in != extractq.InputText {
				t.Errorf("native %v, OCR %v, input %q: want neither (OCR is off)", r.Native, r.OCR, in)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.flags
			if f.OCR == "" {
				f.OCR = "auto"
			}
			r, in, err := f.Reader(nil, func(k string) string { return tc.env[k] })
			if tc.msg != "" {
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want a usage error saying %q", err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, &f, r, in)
		})
	}
}
