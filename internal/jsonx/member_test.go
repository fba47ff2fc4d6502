package jsonx

import (
	"reflect"
	"testing"
)

// memberWalk reads the object at the start of b with Member, skipping
// each value, and returns its keys and whether it read well.
func memberWalk(b []byte) ([]string, bool) {
	d := &Scanner{B: b}
	var keys []string
	for first := true; ; first = false {
		key, more, ok := d.Member(first)
		if !more {
			return keys, ok
		}
		keys = append(keys, string(key))
		if !d.Skip() {
			return keys, false
		}
	}
}

// objectWalk is memberWalk by Object.
func objectWalk(b []byte) ([]string, bool) {
	d := &Scanner{B: b}
	var keys []string
	ok := d.Object(func(key []byte) bool {
		keys = append(keys, string(key))
		return d.Skip()
	})
	return keys, ok
}

// FuzzMemberMatchesObject checks that Member reads an object's keys as
// Object does, and takes what Object takes.
func FuzzMemberMatchesObject(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a":1,"b":"x","c":{"d":[1,null]}}`, "{ \"a\" :\t1 ,\n\"b\" : 2 }",
		`{"a":1,}`, `{"a" 1}`, `{"a\"b":1}`, "{\"\xc3\xa9\":1}", `{"a":1 "b":2}`, `{"a":1`, `{`, `[]`, ``, `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, ok := memberWalk(b)
		wantKeys, wantOK := objectWalk(b)
		if ok != wantOK || ok && !reflect.DeepEqual(keys, wantKeys) {
			t.Fatalf("Member on %q: %q, %v; Object: %q, %v", b, keys, ok, wantKeys, wantOK)
		}
	})
}
