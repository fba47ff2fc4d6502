package main

import "testing"

func TestConnFlagPrecedence(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"flag wins", []string{"status", "--database-url", "postgres://flag/db"}, "postgres://flag/db"},
		{"resolver when unset", []string{"status"}, "postgres://resolved/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCmd()
			cmd, rest, err := root.Find(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatal(err)
			}
			got := connFlag(cmd, "database-url", func() string { return "postgres://resolved/db" })
			if got != tt.want {
				t.Errorf("connFlag = %q, want %q", got, tt.want)
			}
		})
	}
}
