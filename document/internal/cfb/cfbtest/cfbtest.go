// Package cfbtest writes small compound files for tests: the reader's
// own tests, and fixtures of formats nothing on the build machine writes
// (Outlook .msg). The writer itself is cfb.Build.
package cfbtest

import "github.com/extractq/extractq/document/internal/cfb"

// Stream is one stream to write; storages are made from the path's
// directories ("__attach_version1.0_#00000000/__substg1.0_3701000D").
type Stream = cfb.Stream

// Options shape the file.
type Options = cfb.WriteOptions

// Build writes a compound file holding the streams (see cfb.Build).
func Build(streams []Stream, opt Options) []byte { return cfb.Build(streams, opt) }
