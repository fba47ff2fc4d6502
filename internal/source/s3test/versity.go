package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/extractq/extractq/internal/source"
)

// The Versity S3 Gateway (versitygw, Apache-2.0) is an S3 server that
// checks what gofakes3 does not: every request's V4 signature against the
// account's secret, and each account's access to each bucket (IAM
// accounts of role "user" reach only the buckets they own). Tests of
// refused credentials and denied buckets run against it.
//
// It is a program, built from the tools module beside this file:
//
//	go -C internal/source/s3test/versitygw install tool
//
// (.ci/run does this); the tests find it on PATH or at $EXTRACTQ_VERSITYGW.

// Root credentials of a Versity gateway started by StartVersity.
const (
	VersityRootKey    = "extractq-root"
	VersityRootSecret = "extractq-root-secret"
)

// Versity is a running versitygw over a temporary directory.
type Versity struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	bin      string
}

// VersityBinary is the versitygw program's path: $EXTRACTQ_VERSITYGW, else
// versitygw on PATH or in $HOME/go/bin (where `go install` puts it).
func VersityBinary() (string, error) {
	if p := os.Getenv("EXTRACTQ_VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := filepath.Join(home, "go", "bin", "versitygw"); fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("versitygw not found: install it with `go -C internal/source/s3test/versitygw install tool` (or set EXTRACTQ_VERSITYGW)")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// StartVersity starts a versitygw for the test, stopped when it ends.
// Without the program the test fails under CI (CI=true: .ci/run installs
// it) and is skipped elsewhere, saying how to install it.
func StartVersity(t testing.TB) *Versity {
	t.Helper()
	bin, err := VersityBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"data", "iam"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A free port: taken, released, and handed to the gateway.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--port", addr, "--iam-dir", filepath.Join(dir, "iam"), "--quiet", "posix", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+VersityRootKey, "ROOT_SECRET_KEY="+VersityRootSecret)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	v := &Versity{Endpoint: "http://" + addr, bin: bin}
	c, err := v.Client(VersityRootKey, VersityRootSecret)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.ListBuckets(ctx)
		cancel()
		if err == nil {
			return v
		}
		select {
		case <-exited:
			t.Fatalf("versitygw exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw does not answer on %s after 30s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Options are the source options reaching the gateway as access/secret.
func (v *Versity) Options(access, secret string) source.S3Options {
	return source.S3Options{Endpoint: v.Endpoint, Region: "us-east-1", Creds: credentials.NewStaticV4(access, secret, "")}
}

// Client is a client of the gateway as access/secret.
func (v *Versity) Client(access, secret string) (*minio.Client, error) {
	return source.NewS3Client(v.Options(access, secret))
}

// admin runs one of versitygw's admin commands as root.
func (v *Versity) admin(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, v.bin, append([]string{"admin", "--access", VersityRootKey, "--secret", VersityRootSecret,
		"--endpoint-url", v.Endpoint}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("s3test: versitygw admin %s: %w: %s", args[0], err, out)
	}
	return nil
}

// CreateUser adds an IAM account of role "user": it reaches only the
// buckets it owns.
func (v *Versity) CreateUser(ctx context.Context, access, secret string) error {
	return v.admin(ctx, "create-user", "--access", access, "--secret", secret, "--role", "user")
}

// CreateBucket creates bucket owned by owner (an account's access key),
// holding objects (key → body) put as root.
func (v *Versity) CreateBucket(ctx context.Context, bucket, owner string, objects map[string]string) error {
	if err := v.admin(ctx, "create-bucket", "--bucket", bucket, "--owner", owner); err != nil {
		return err
	}
	c, err := v.Client(VersityRootKey, VersityRootSecret)
	if err != nil {
		return err
	}
	for k, body := range objects {
		if _, err := c.PutObject(ctx, bucket, k, bytes.NewReader([]byte(body)), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			return fmt.Errorf("s3test: put %s/%s: %w", bucket, k, err)
		}
	}
	return nil
}

// DenyPrefix sets a bucket policy on bucket that lets account list and
// read it, except under prefix: a ListBucket with an s3:prefix under it and
// a GetObject of a key under it are denied explicitly.
func (v *Versity) DenyPrefix(ctx context.Context, bucket, account, prefix string) error {
	c, err := v.Client(VersityRootKey, VersityRootSecret)
	if err != nil {
		return err
	}
	policy := fmt.Sprintf(`{"Version": "2012-10-17", "Statement": [
		{"Effect": "Allow", "Principal": {"AWS": [%[2]q]}, "Action": ["s3:ListBucket", "s3:GetObject"],
		 "Resource": ["arn:aws:s3:::%[1]s", "arn:aws:s3:::%[1]s/*"]},
		{"Effect": "Deny", "Principal": {"AWS": [%[2]q]}, "Action": ["s3:ListBucket"],
		 "Resource": ["arn:aws:s3:::%[1]s"], "Condition": {"StringLike": {"s3:prefix": [%[3]q]}}},
		{"Effect": "Deny", "Principal": {"AWS": [%[2]q]}, "Action": ["s3:GetObject"],
		 "Resource": ["arn:aws:s3:::%[1]s/%[4]s"]}]}`, bucket, account, prefix+"*", prefix+"*")
	if err := c.SetBucketPolicy(ctx, bucket, policy); err != nil {
		return fmt.Errorf("s3test: policy of %s: %w", bucket, err)
	}
	return nil
}
