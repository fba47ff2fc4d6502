package cli

import (
	"path/filepath"
	"strings"

	"github.com/extractq/extractq/schema"
)

// SchemaName is the name a schema file is registered under: name when
// given, else the schema's own name (a wrapper's or its title), else the
// file name without its extension. submit and schema register agree on it.
func SchemaName(file string, sc *schema.Schema, name string) string {
	if name != "" {
		return name
	}
	if n := sc.Name(); n != "" {
		return n
	}
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}
