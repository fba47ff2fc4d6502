package audit

import (
	"database/sql/driver"

	"github.com/jackc/pgx/v5/pgtype"
)

// strArray is a []string sent to Postgres as a text[] parameter. pgx
// wraps a plain []string in pgtype.FlatArray, whose Index returns each
// element as an interface value: one allocation per string, six to nine
// per submitted document (the documents' store and the submission's
// lookups). strArray's Index returns a pointer to the element, which fits
// in an interface as it is, as a pgtype.TextValuer, which pgx's text
// encoder takes without copying it: the bytes on the wire are those of
// the []string (TestStrArrayEncodesLikeStrings, FuzzStrArray). For text[]
// only: a jsonb[] parameter would marshal the elements as JSON strings.
type strArray []string

// Dimensions is pgtype.FlatArray's: nil (NULL) for a nil slice.
func (a strArray) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index returns element i by pointer: no allocation.
func (a strArray) Index(i int) any { return (*strElem)(&a[i]) }

// Value is the []string itself, which pgx encodes on a connection that
// does not learn the parameters' types first (default_query_exec_mode
// exec or simple_protocol): there strArray is not known as an array type.
func (a strArray) Value() (driver.Value, error) { return []string(a), nil }

// IndexType tells pgx the elements' type.
func (a strArray) IndexType() any { return new(strElem) }

// strElem is an element of a strArray.
type strElem string

// TextValue is the element as pgx's text encoder takes it.
func (e *strElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}
