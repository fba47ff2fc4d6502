package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif" // pictures' sizes, for their token cost
	_ "image/jpeg"
	_ "image/png"
	"strings"

	"github.com/extractq/extractq/document"
)

// Pictures and files in a request (OpenAI image_url and file parts,
// Anthropic image and document blocks, Gemini inline_data, Ollama images)
// are kept in the message text as marks while the body is decoded, then
// replaced by what the simulator reads in them (readMedia): a PDF's text
// layer, or a picture's text from the ImageReader. So native input is
// answered from the document as text input is.

// mediaMark opens and closes a mark: mediaMark TYPE "\x00" BASE64 mediaMark.
const mediaMark = "\x00sim-media\x00"

// mediaRef is the mark for one picture or file.
func mediaRef(mediaType, b64 string) string {
	return mediaMark + mediaType + "\x00" + b64 + mediaMark
}

// dataURLRef is the mark for a data URL ("data:image/png;base64,…"); a
// bare base64 string is taken as fallbackType.
func dataURLRef(u, fallbackType string) (string, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			return "", fmt.Errorf("the simulator reaches no URL (%.40s…): send the picture or file inline, as a base64 data URL", u)
		}
		return mediaRef(fallbackType, u), nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return "", fmt.Errorf("a data URL must be data:TYPE;base64,DATA")
	}
	return mediaRef(strings.TrimSuffix(meta, ";base64"), data), nil
}

// ImageReader reads the text a picture shows, for the simulator to answer
// from: an answer key, or OCR in a test. Without one a picture is refused
// with an error saying so.
type ImageReader func(ctx context.Context, mediaType string, data []byte) (string, error)

// WithImageReader lets the simulator read pictures.
func WithImageReader(r ImageReader) Option { return func(s *Server) { s.images = r } }

// ReadsImages reports whether the simulator has an image reader: what the
// sim provider's capabilities say about pictures.
func (s *Server) ReadsImages() bool { return s.images != nil }

// pageTokens is what one PDF page's picture costs on top of its text, and
// the most a picture costs: the vendors bill a picture by its pixels (about
// pixels/750 tokens, Anthropic's rule) after shrinking it within about
// 1.15 megapixels.
const (
	maxImagePixels = 1_150_000
	pixelsPerToken = 750
	pageTokens     = maxImagePixels / pixelsPerToken
)

// imageTokens is a picture's token cost by its size (pageTokens when its
// size cannot be read).
func imageTokens(data []byte) int {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return pageTokens
	}
	return (min(cfg.Width*cfg.Height, maxImagePixels) + pixelsPerToken - 1) / pixelsPerToken
}

// readMedia replaces every mark in req's messages by the text the
// simulator reads in it, and counts what the pictures cost.
func (s *Server) readMedia(ctx context.Context, req *chatRequest) *apiError {
	for i := range req.messages {
		m := &req.messages[i]
		if !strings.Contains(m.text, mediaMark) {
			continue
		}
		var b strings.Builder
		rest := m.text
		for {
			before, after, ok := strings.Cut(rest, mediaMark)
			b.WriteString(before)
			if !ok {
				break
			}
			ref, tail, ok := strings.Cut(after, mediaMark)
			if !ok {
				return invalid("a content part is malformed")
			}
			rest = tail
			mediaType, b64, _ := strings.Cut(ref, "\x00")
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return invalid("a %s content part's data is not base64: %v", mediaType, err)
			}
			text, tok, aerr := s.mediaText(ctx, mediaType, data)
			if aerr != nil {
				return aerr
			}
			b.WriteString(text)
			req.mediaTokens += tok
			if strings.HasPrefix(mediaType, "image/") {
				// A picture is billed by its pixels, not by the text in it.
				req.mediaChars += len(text)
			}
		}
		m.text = b.String()
	}
	return nil
}

// mediaText reads one picture or file: its text and its token cost beyond
// that text.
func (s *Server) mediaText(ctx context.Context, mediaType string, data []byte) (string, int, *apiError) {
	standIn, known := s.answers.mediaStandIn(data)
	switch {
	case mediaType == "application/pdf":
		doc, err := document.ReadBytes(ctx, data, document.Options{Name: "the PDF content part"})
		if err != nil {
			return "", 0, invalid("the simulator could not read the PDF content part: %v", err)
		}
		// A model sees each page as a picture too: a scanned page is read
		// by the image reader when there is one.
		text := doc.Text
		for _, p := range doc.Pages {
			if p.Image == nil || p.End > p.Start || s.images == nil {
				continue
			}
			t, err := s.images(ctx, p.Image.MediaType, p.Image.Data)
			if err != nil {
				return "", 0, invalid("the simulator could not read page %d of the PDF: %v", p.Number, err)
			}
			text += "\n" + t
		}
		if known {
			text += "\n" + standIn
		}
		return text, pageTokens * max(1, len(doc.Pages)), nil
	case strings.HasPrefix(mediaType, "image/"):
		if known { // the key's label is the answer: no pixels to read
			return standIn, imageTokens(data), nil
		}
		if s.images == nil {
			return "", 0, invalid("the simulator answers from text and cannot read this %s picture: label it in the answer key (--answers, EXTRACTQ_SIM_ANSWERS), give it an image reader (sim.WithImageReader), or send the page's text (OCR, or --input text)", mediaType)
		}
		text, err := s.images(ctx, mediaType, data)
		if err != nil {
			return "", 0, invalid("the simulator could not read the %s picture: %v", mediaType, err)
		}
		return text, imageTokens(data), nil
	}
	return "", 0, invalid("content parts of type %q are not supported: send images (image/png, image/jpeg, image/webp, image/gif) or PDF files", mediaType)
}
