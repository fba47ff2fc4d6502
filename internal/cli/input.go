package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/intake"
	"github.com/extractq/extractq/llm"
)

// InputFlags are the document reader's flags, the same in `extractq
// extract` and `submit`.
type InputFlags struct {
	Glob                 string
	Transcode, StdinText bool
	MaxDocument          int64
	Format               string
	Input                string
	Attachments          string
	OCR                  string
	PasswordFlags
}

// Register defines the flags.
func (f *InputFlags) Register(fl *pflag.FlagSet) {
	fl.StringVar(&f.Glob, "glob", "", "in folders, only files whose name matches, e.g. '*.txt'")
	fl.BoolVar(&f.Transcode, "transcode", false, "read text that is not UTF-8 as Windows-1252 instead of rejecting it")
	fl.BoolVar(&f.StdinText, "stdin-text", false, "read stdin (-) as one document even when its first line looks like JSONL")
	fl.Int64Var(&f.MaxDocument, "max-document", intake.DefaultMaxDocument, "documents larger than this many bytes are rejected (in a JSONL file or object: each line's text, not the file)")
	fl.StringVar(&f.Format, "format", "", "read every file as this format instead of recognising it by content (pdf, html, eml, docx, …)")
	fl.StringVar(&f.Input, "input", string(extractq.InputAuto), "how documents reach the model: auto (text; pages without text as pictures to a model that reads images), text, or native (pictures, or a whole PDF to a model that reads PDFs)")
	fl.StringVar(&f.Attachments, "attachments", string(intake.AttachSeparate), "attachments (an e-mail's files, a zip's, a PDF's): separate (each its own document, id PARENT#NAME), inline (appended to the parent's text) or skip; objects embedded in an office file (a workbook in a report) are always part of it")
	f.PasswordFlags.Register(fl, "encrypted documents")
	fl.StringVar(&f.OCR, "ocr", "auto", "read pages without text by OCR (the tesseract command) when the model cannot see them: auto (when tesseract is installed) or off")
}

// Reader checks the flags and makes the reader, and says how documents
// reach the model. The caller sets the reader's Native once it knows the
// model reads pictures. A bad value is a usage error (exit 2).
func (f *InputFlags) Reader(stdin io.Reader, getenv func(string) string) (*intake.Reader, extractq.Input, error) {
	in, err := extractq.ParseInput(f.Input)
	if err != nil {
		return nil, "", Usage(fmt.Errorf("--input %q: want auto, text or native", f.Input))
	}
	att, err := intake.ParseAttachments(f.Attachments)
	if err != nil {
		return nil, "", Usage(err)
	}
	// "text" is plain text, read by intake's own rules when no text reader
	// is registered.
	names := document.FormatNames()
	if !slices.Contains(names, "text") {
		names = append([]string{"text"}, names...)
	}
	if f.Format != "" && !slices.Contains(names, f.Format) {
		return nil, "", Usage(fmt.Errorf("--format %q: not a format extractq reads; use one of: %s", f.Format, strings.Join(names, ", ")))
	}
	if f.OCR != "auto" && f.OCR != "off" {
		return nil, "", Usage(fmt.Errorf("--ocr %q: want auto or off", f.OCR))
	}
	password, err := f.PasswordFlags.Value(getenv)
	if err != nil {
		return nil, "", err
	}
	return &intake.Reader{
		Glob: f.Glob, Transcode: f.Transcode, StdinText: f.StdinText, MaxDocument: f.MaxDocument, Stdin: stdin,
		Format: f.Format, Password: password, Attachments: att,
	}, in, nil
}

// ForModel settles how r treats pages without a text layer once the model
// is known: shown to it as pictures when it reads images and the input is
// not text; else read by OCR when --ocr is auto and tesseract is installed;
// else such a document is rejected naming both remedies.
func (f *InputFlags) ForModel(r *intake.Reader, in extractq.Input, caps llm.Capabilities) {
	r.Native = caps.Images && in != extractq.InputText
	r.NoNativePDF = in == extractq.InputNative && !caps.PDF
	r.NativeInput = in == extractq.InputNative
	r.WholePDF = caps.PDF && in != extractq.InputText
	if r.Native || f.OCR == "off" {
		return
	}
	if t, err := document.NewTesseract(); err == nil {
		r.OCR = t
	}
}
