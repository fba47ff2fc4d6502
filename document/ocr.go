package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ErrNoOCR: a page has no text layer and OCR cannot run.
var ErrNoOCR = errors.New("OCR is not available: the tesseract command is not installed; install it (apt-get install tesseract-ocr), or send the pages to a model that reads images (--input native)")

// Tesseract reads page images with the tesseract command (Tesseract OCR).
// One call runs one process on one image; the process is told to use one
// thread, since a fleet already runs many documents at once.
type Tesseract struct {
	// Path is the tesseract command.
	Path string
	// Languages are tesseract's language codes joined by "+" ("eng",
	// "deu+fra"); "" is eng.
	Languages string
}

// NewTesseract finds the tesseract command on PATH. It fails with ErrNoOCR
// when the command is missing: OCR is optional, never required.
func NewTesseract() (*Tesseract, error) {
	path, err := exec.LookPath("tesseract")
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoOCR, err)
	}
	return &Tesseract{Path: path}, nil
}

// Recognize returns the text tesseract reads in img, lines in reading
// order.
func (t *Tesseract) Recognize(ctx context.Context, img *Image) (string, error) {
	if img == nil || len(img.Data) == 0 {
		return "", errors.New("tesseract: no image to read")
	}
	lang := t.Languages
	if lang == "" {
		lang = "eng"
	}
	cmd := exec.CommandContext(ctx, t.Path, "stdin", "stdout", "-l", lang)
	cmd.Stdin = bytes.NewReader(img.Data)
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctxErr := context.Cause(ctx); ctxErr != nil {
			return "", ctxErr
		}
		return "", fmt.Errorf("tesseract (%s, %d×%d): %w: %s (is the language data for %q installed? apt-get install tesseract-ocr-%s)", img.MediaType, img.Width, img.Height, err, strings.TrimSpace(stderr.String()), lang, strings.Split(lang, "+")[0])
	}
	return strings.TrimSpace(strings.ReplaceAll(string(out), "\f", "")), nil
}
