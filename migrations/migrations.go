// Package migrations holds extractq's PostgreSQL schema as numbered,
// forward-only SQL files (tern format), embedded so every binary carries the
// schema it was built against. internal/audit applies them.
package migrations

import "embed"

// FS holds the migration files, named NNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
