package schema

import (
	"fmt"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	c := NewCache(2)
	a1, err := c.Compile([]byte(`{"a":"string"}`))
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := c.Compile([]byte(`{"a":"string"}`))
	if a1 != a2 {
		t.Error("same source compiled twice")
	}
	// Same schema, other spelling: one shared *Schema.
	a3, _ := c.Compile([]byte(`{ "a" : "string" }`))
	if a3 != a1 {
		t.Error("equal fingerprints not shared")
	}
	// Options are part of the key.
	j2020, _ := c.Compile([]byte(`{"type":"string"}`))
	j7, _ := c.Compile([]byte(`{"type":"string"}`), WithDraft(Draft7))
	if j7 == j2020 || j7.Fingerprint() == j2020.Fingerprint() {
		t.Error("draft 7 compile served from the 2020-12 entry")
	}
	if c.Len() != 2 {
		t.Errorf("Len() = %d, want 2 (LRU bound)", c.Len())
	}
	if _, err := c.Compile([]byte(`{"a":"strng"}`)); err == nil {
		t.Error("invalid schema cached as valid")
	}
	if c.Len() != 2 {
		t.Errorf("an error was cached: Len() = %d", c.Len())
	}

	var wg sync.WaitGroup
	got := make([]*Schema, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.Compile([]byte(`{"b":"integer"}`))
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		}()
	}
	wg.Wait()
	for _, s := range got {
		if s != got[0] {
			t.Fatal("concurrent compiles returned different schemas")
		}
	}
	for i := range 10 {
		if _, err := c.Compile([]byte(fmt.Sprintf(`{"f%d":"string"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 {
		t.Errorf("Len() = %d after many compiles, want 2", c.Len())
	}
}
