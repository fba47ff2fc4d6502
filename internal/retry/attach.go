package retry

import (
	"fmt"
	"strings"

	"github.com/extractq/extractq/llm"
)

// markAttachments puts a marker into the document text at each
// attachment's place, so that the rendered task can be cut there and the
// picture or file shown between the text around it. Without attachments
// the document is returned unchanged and the marker is "".
func markAttachments(document string, as []Attachment) (marked, marker string, err error) {
	if len(as) == 0 {
		return document, "", nil
	}
	marker = "\u2063part-" + newNonce(document) + "\u2063"
	var b strings.Builder
	last := 0
	for i, a := range as {
		if a.At < last || a.At > len(document) {
			return "", "", fmt.Errorf("%w: attachment %d at byte %d: want offsets in order within the document's %d bytes", ErrConfig, i+1, a.At, len(document))
		}
		switch a.Part.Kind {
		case llm.PartImage, llm.PartFile:
		default:
			return "", "", fmt.Errorf("%w: attachment %d is a %q part: want an image or a file", ErrConfig, i+1, a.Part.Kind)
		}
		b.WriteString(document[last:a.At])
		b.WriteString(marker)
		last = a.At
	}
	b.WriteString(document[last:])
	return b.String(), marker, nil
}

// withAttachments cuts the task message at the markers: the text before
// the first stays its Content, and each attachment follows with the text
// after it as a text part.
func withAttachments(m llm.Message, marker string, as []Attachment) llm.Message {
	pieces := strings.Split(m.Content, marker)
	if len(pieces) != len(as)+1 {
		// A template that does not show the document (or shows it twice):
		// the pictures go after the text, in order.
		pieces = append([]string{strings.ReplaceAll(m.Content, marker, "")}, make([]string, len(as))...)
	}
	out := llm.Message{Role: m.Role, Content: pieces[0]}
	for i, a := range as {
		out.Parts = append(out.Parts, a.Part)
		if pieces[i+1] != "" {
			out.Parts = append(out.Parts, llm.Part{Kind: llm.PartText, Text: pieces[i+1]})
		}
	}
	return out
}
