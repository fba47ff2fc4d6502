package jobs

import (
	"reflect"
	"testing"
)

// TestTailOfSkipsPointerOptions keeps tailOf's list of Options' pointer
// fields whole: an envelope whose options hold any pointer must not have
// its tail cached (the value pointed to may change while the pointer
// stays), so a pointer field added to Options without adding it there
// fails here.
func TestTailOfSkipsPointerOptions(t *testing.T) {
	t.Parallel()
	if _, ok := tailOf(&Envelope{}); !ok {
		t.Fatal("an envelope without options is not cached")
	}
	ot := reflect.TypeFor[Options]()
	for i := range ot.NumField() {
		f := ot.Field(i)
		if f.Type.Kind() != reflect.Pointer {
			continue
		}
		var env Envelope
		reflect.ValueOf(&env.Options).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		if _, ok := tailOf(&env); ok {
			t.Errorf("Options.%s set: tailOf caches the tail", f.Name)
		}
	}
}
