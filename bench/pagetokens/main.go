// Command pagetokens measures the prompt tokens one page costs when a
// document reaches the model as text and natively (the whole PDF, which the
// vendors bill as each page's text plus its picture), on the simulator,
// whose token counts follow the vendors' published rules (text: about four
// characters a token; a picture: its pixels / 750, at most about 1,530 a
// page). Run from the repository root:
//
//	go run ./bench/pagetokens examples/documents/*.pdf
//
// The scanned PDF is read by OCR (tesseract) in text mode, and by the
// simulator's image reader (OCR standing in for a vision model) natively.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pagetokens:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, paths []string) error {
	s, err := schema.CompileFile("examples/invoice.schema.json")
	if err != nil {
		return err
	}
	ocr, err := document.NewTesseract()
	if err != nil {
		return err
	}
	reader := sim.WithImageReader(func(ctx context.Context, mt string, data []byte) (string, error) {
		return ocr.Recognize(ctx, &document.Image{MediaType: mt, Data: data})
	})
	p, err := simprovider.New("sim:clean", sim.New(sim.Profile{Name: "clean"}, reader))
	if err != nil {
		return err
	}
	// The prompt without a document: rules and schema, paid once per call.
	base, err := prompt(ctx, p, &document.Document{Text: " "}, nil, s, extractq.InputText)
	if err != nil {
		return err
	}
	fmt.Printf("prompt without a document: %d tokens (mode strict, schema examples/invoice.schema.json)\n\n", base)
	fmt.Printf("%-28s %5s %14s %14s %7s\n", "document", "pages", "text/page", "native/page", "ratio")
	for _, path := range paths {
		original, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := document.ReadBytes(ctx, original, document.Options{Name: path, OCR: ocr})
		if err != nil {
			return err
		}
		asText, err := prompt(ctx, p, doc, original, s, extractq.InputText)
		if err != nil {
			return fmt.Errorf("%s as text: %w", path, err)
		}
		native, err := prompt(ctx, p, doc, original, s, extractq.InputNative)
		if err != nil {
			return fmt.Errorf("%s natively: %w", path, err)
		}
		n := max(1, len(doc.Pages))
		t, nv := float64(asText-base)/float64(n), float64(native-base)/float64(n)
		fmt.Printf("%-28s %5d %14.0f %14.0f %6.1f×\n", filepath.Base(path), n, t, nv, nv/t)
	}
	return nil
}

// prompt is the prompt tokens of one call extracting doc.
func prompt(ctx context.Context, p llm.Provider, doc *document.Document, original []byte, s *schema.Schema, in extractq.Input) (int, error) {
	x, err := extractq.New(extractq.WithProvider(p), extractq.WithInput(in), extractq.WithMaxReasks(0))
	if err != nil {
		return 0, err
	}
	res, err := x.ExtractOriginal(ctx, doc, original, s)
	if res == nil {
		return 0, err
	}
	if len(res.Attempts) == 0 {
		return 0, fmt.Errorf("no call made: %v", err)
	}
	return res.Attempts[0].Usage.PromptTokens, nil
}
