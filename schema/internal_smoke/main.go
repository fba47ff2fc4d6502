package main

import (
	"fmt"
	"github.com/extractq/extractq/schema"
)

func main() {
	s, _ := schema.Compile([]byte(`{"anyOf":[{"type":"string","minLength":3},{"type":"null"}]}`))
	for seed := uint64(1); seed < 12; seed++ {
		in, err := s.Instance(seed)
		fmt.Printf("%s %v| ", in, err)
	}
	fmt.Println()
}
