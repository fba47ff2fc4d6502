package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/extractq/extractq"
)

// ChunkVar defines --chunk, how `extractq extract` and `submit` split long
// documents; read its value with ParseChunk.
func ChunkVar(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "chunk", string(extractq.ChunkAuto), "split long documents: auto (when the model's context window needs it), off, or a chunk size in tokens")
}

// ParseChunk reads --chunk's value (extractq.ParseChunking); a bad one is
// bad usage (exit 2), worded the same for every command that takes it.
func ParseChunk(s string) (extractq.Chunking, error) {
	c, err := extractq.ParseChunking(s)
	if err != nil {
		return "", Usage(fmt.Errorf("--chunk: %w", err))
	}
	return c, nil
}
