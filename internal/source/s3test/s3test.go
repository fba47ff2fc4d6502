// Package s3test runs an S3-protocol server for tests and benchmarks: the
// gofakes3 server (S3's REST API: ListObjectsV2 with start-after and
// continuation tokens, GET, PUT, multipart uploads, S3 error codes) over a
// bbolt file, so its objects persist across restarts of the server, on a
// free port of 127.0.0.1. Clients reach it over real HTTP, exactly as they
// reach MinIO or AWS; a hook lets a test inject faults in front of it
// (a stall mid-listing, a denied prefix).
package s3test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	bolt "go.etcd.io/bbolt"

	"github.com/extractq/extractq/internal/source"
)

// Credentials the server is reached with (it does not check them).
const (
	AccessKey = "extractq-test"
	SecretKey = "extractq-test-secret"
)

// Interceptor sees every request before the server does; it returns true
// when it has answered the request itself.
type Interceptor func(w http.ResponseWriter, r *http.Request) bool

// Server is a running S3 server.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	db       *bolt.DB
	backend  *s3bolt.Backend
	srv      *http.Server
	hook     atomic.Pointer[Interceptor]
	done     chan error
}

// New starts a server storing its objects in dir/s3.bolt. noSync skips
// fsync on every write (for loading a benchmark's million objects).
func New(dir string, noSync bool) (*Server, error) {
	db, err := bolt.Open(filepath.Join(dir, "s3.bolt"), 0o600, &bolt.Options{Timeout: 5 * time.Second, NoSync: noSync, NoFreelistSync: noSync})
	if err != nil {
		return nil, fmt.Errorf("s3test: open store: %w", err)
	}
	backend := s3bolt.New(db)
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("s3test: listen: %w", err)
	}
	s := &Server{Endpoint: "http://" + ln.Addr().String(), db: db, backend: backend, done: make(chan error, 1)}
	inner := fake.Server()
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := s.hook.Load(); h != nil && (*h)(w, r) {
			return
		}
		decodeChunkedPart(r)
		inner.ServeHTTP(w, r)
	})}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Start starts a server for t in a temporary folder and stops it at the
// end of the test.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Intercept sets (nil: removes) the fault hook.
func (s *Server) Intercept(f Interceptor) {
	if f == nil {
		s.hook.Store(nil)
		return
	}
	s.hook.Store(&f)
}

// streamingPayload marks a body sent in signed chunks (aws-chunked).
const streamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"

// decodeChunkedPart unwraps the signed chunks of a multipart upload's
// part, which gofakes3 decodes for PutObject but stores raw for
// UploadPart (MinIO and AWS decode both).
func decodeChunkedPart(r *http.Request) {
	if r.Method != http.MethodPut || !r.URL.Query().Has("partNumber") || r.Header.Get("X-Amz-Content-Sha256") != streamingPayload {
		return
	}
	n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(&chunkReader{br: bufio.NewReader(r.Body)})
	r.ContentLength = n
	r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
}

// chunkReader reads the data of "SIZE;chunk-signature=…\r\nDATA\r\n"
// chunks up to the empty last one.
type chunkReader struct {
	br   *bufio.Reader
	left int64
	done bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		line, err := c.br.ReadString('\n')
		if err != nil {
			return 0, err
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil {
			return 0, fmt.Errorf("s3test: bad chunk header %q", line)
		}
		if n == 0 {
			c.done = true
			continue
		}
		c.left = n
	}
	p = p[:min(int64(len(p)), c.left)]
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		_, err = c.br.Discard(2) // the chunk's CRLF
	}
	return n, err
}

// Close stops the server and closes its store.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if s.srv.Shutdown(ctx) != nil {
		// A request still running (a stalled one a test left behind):
		// cut it; only the store's closing matters.
		_ = s.srv.Close()
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return errors.Join(err, s.db.Close())
}

// Options are the source options that reach this server.
func (s *Server) Options() source.S3Options {
	return source.S3Options{Endpoint: s.Endpoint, Region: "us-east-1", Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")}
}

// Client is a client of this server.
func (s *Server) Client() (*minio.Client, error) { return source.NewS3Client(s.Options()) }

// Fill creates bucket if needed and puts objects (key → body).
func (s *Server) Fill(ctx context.Context, bucket string, objects map[string]string) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	if ok, err := c.BucketExists(ctx, bucket); err != nil {
		return fmt.Errorf("s3test: bucket %s: %w", bucket, err)
	} else if !ok {
		if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
			return fmt.Errorf("s3test: make bucket %s: %w", bucket, err)
		}
	}
	for k, v := range objects {
		if _, err := c.PutObject(ctx, bucket, k, bytes.NewReader([]byte(v)), int64(len(v)), minio.PutObjectOptions{}); err != nil {
			return fmt.Errorf("s3test: put %s/%s: %w", bucket, k, err)
		}
	}
	return nil
}

// Load stores n objects straight into the server's store, without HTTP
// (to set up a benchmark's million objects quickly): object i is
// key(i) → body(i). The bucket is created if needed.
func (s *Server) Load(bucket string, n int, key func(int) string, body func(int) []byte) error {
	if ok, err := s.backend.BucketExists(bucket); err != nil {
		return err
	} else if !ok {
		if err := s.backend.CreateBucket(bucket); err != nil {
			return fmt.Errorf("s3test: create bucket %s: %w", bucket, err)
		}
	}
	// What gofakes3 records of an HTTP PUT, which its GET answers with.
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat), "Content-Type": "text/plain"}
	for i := range n {
		b := body(i)
		if _, err := s.backend.PutObject(bucket, key(i), meta, bytes.NewReader(b), int64(len(b)), nil); err != nil {
			return fmt.Errorf("s3test: put %s: %w", key(i), err)
		}
	}
	return nil
}

// Deny answers every request whose path starts with /bucket/prefix, or
// that lists bucket under prefix, with S3's 403 AccessDenied, as a bucket
// policy would.
func Deny(bucket, prefix string) Interceptor {
	return func(w http.ResponseWriter, r *http.Request) bool {
		q := r.URL.Query()
		var denied bool
		if r.URL.Path == "/"+bucket || r.URL.Path == "/"+bucket+"/" {
			denied = !q.Has("location") && strings.HasPrefix(q.Get("prefix"), prefix)
		} else {
			denied = strings.HasPrefix(r.URL.Path, "/"+bucket+"/"+prefix)
		}
		if !denied {
			return false
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><Resource>%s</Resource><RequestId>s3test</RequestId></Error>`, r.URL.Path)
		return true
	}
}
