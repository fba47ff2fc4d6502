package jsonx
import ("testing";"fmt")
func TestDbg(t *testing.T){
	for _, in := range []string{`{"foo": "[\"bar\"]"}`, "```\n2 1/4 cups all-purpose flour\n```", `{"snippets": ["....."]}`} {
		for _, c := range FindWith(in, FindOptions{Policy: PolicyCoerce, Scalars: ScalarString|ScalarNumber}) {
			fmt.Printf("%q -> %s %v scalar=%d\n", in, c.JSON, c.Repairs, c.Scalar)
		}
	}
}
