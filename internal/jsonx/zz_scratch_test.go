package jsonx

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestScratch(t *testing.T) {
	data, _ := os.ReadFile("/tmp/jx/in.txt")
	for _, in := range strings.Split(string(data), "\n====\n") {
		cs := Find(in, PolicySyntax)
		fmt.Printf("IN: %q\n", in)
		for _, c := range cs {
			var kinds []string
			for _, r := range c.Repairs {
				kinds = append(kinds, r.Kind)
			}
			fmt.Printf("  -> %s  %v [%d,%d]\n", c.JSON, kinds, c.Start, c.End)
		}
		if len(cs) == 0 {
			fmt.Println("  -> NONE")
		}
	}
}
