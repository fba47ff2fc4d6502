package testenv

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestDatabaseIsUsableAndDropped(t *testing.T) {
	ctx := context.Background()
	url, drop, err := TempDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to the new database: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatal("the database still exists after drop")
	}
}

func TestSharedTestdata(t *testing.T) {
	p := SharedTestdata(t, "openai-chat-completions")
	if filepath.Base(p) != "openai-chat-completions" {
		t.Fatalf("got %s", p)
	}
}
