package source

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
)

// URLs is a file listing one URL a line: http(s):// or s3://bucket/key.
// Blank lines and lines starting with # are skipped. A URL's version is
// unknown until it is read (its content hash stands in).
type URLs struct {
	path   string
	client *http.Client
	s3opts S3Options
	mu     sync.Mutex
	s3     *minio.Client // built on the first s3:// line read
}

// NewURLs returns the source for the list at path; client fetches
// http(s) URLs (nil: a client with a 60s timeout), s3opts s3:// ones.
func NewURLs(path string, client *http.Client, s3opts S3Options) *URLs {
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	return &URLs{path: path, client: client, s3opts: s3opts}
}

// URI is "urls:" and the file's path.
func (u *URLs) URI() string { return "urls:" + u.path }

// Resumable is false: the list's lines need not be unique or sorted.
func (u *URLs) Resumable() bool { return false }

// Check opens the list.
func (u *URLs) Check(context.Context) error {
	f, err := os.Open(u.path)
	if err != nil {
		return fmt.Errorf("%w: --from-urls: %w", ErrUsage, err)
	}
	return f.Close()
}

// List reads the file a line at a time. A line that is not an http(s) or
// s3 URL is an item with Err set.
func (u *URLs) List(ctx context.Context, _ string, fn func(Item) error) error {
	f, err := os.Open(u.path)
	if err != nil {
		return fmt.Errorf("%w: --from-urls: %w", ErrUsage, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if err := fn(u.item(n, line)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--from-urls %s: %w", u.path, err)
	}
	return nil
}

func (u *URLs) item(n int, line string) Item {
	it := Item{ID: line, URI: line, Size: -1}
	p, err := url.Parse(line)
	switch {
	case err != nil:
		it.Err = fmt.Errorf("%w: %s line %d: not a URL: %v", ErrItem, u.path, n, err)
	case p.Scheme == "http" || p.Scheme == "https":
		it.fetch = func(ctx context.Context, limit int64) ([]byte, error) { return u.get(ctx, line, limit) }
		it.open = func(ctx context.Context) (*Stream, error) { return u.open(ctx, line) }
		it.name = path.Base(p.Path)
	case p.Scheme == "s3":
		bucket, key, _ := ParseS3URI(line)
		if key == "" || strings.HasSuffix(key, "/") {
			it.Err = fmt.Errorf("%w: %s line %d: %s names no object (a prefix belongs on the command line: submit s3://bucket/prefix)", ErrItem, u.path, n, line)
			break
		}
		it.fetch = func(ctx context.Context, limit int64) ([]byte, error) {
			c, err := u.s3Client()
			if err != nil {
				return nil, err
			}
			return getObject(ctx, c, bucket, key, limit)
		}
		it.open = func(ctx context.Context) (*Stream, error) {
			c, err := u.s3Client()
			if err != nil {
				return nil, err
			}
			return openObject(ctx, c, bucket, key)
		}
		it.name = path.Base(key)
	default:
		it.Err = fmt.Errorf("%w: %s line %d: %q: only http://, https:// and s3:// URLs are read", ErrItem, u.path, n, line)
	}
	return it
}

// s3Client builds the S3 client once, for items fetched side by side.
func (u *URLs) s3Client() (*minio.Client, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.s3 == nil {
		c, err := NewS3Client(u.s3opts)
		if err != nil {
			return nil, err
		}
		u.s3 = c
	}
	return u.s3, nil
}

// open starts a GET of rawURL whose body is read as it arrives. The
// client's Timeout bounds a whole fetch (get), which a long stream read
// between batches of its lines would pass: here it bounds each wait for
// bytes instead (the headers, then every read).
func (u *URLs) open(ctx context.Context, rawURL string) (*Stream, error) {
	idle := u.client.Timeout
	if idle <= 0 {
		idle = time.Minute
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stall := time.AfterFunc(idle, func() { cancel(fmt.Errorf("%w: GET %s: no answer for %s", ErrItem, rawURL, idle)) })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		stall.Stop()
		cancel(nil)
		return nil, fmt.Errorf("%w: %s: %w", ErrItem, rawURL, err)
	}
	c := *u.client
	c.Timeout = 0
	resp, err := c.Do(req)
	stall.Stop()
	if err != nil {
		defer cancel(nil)
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, fmt.Errorf("%w: GET %s: %w", ErrItem, rawURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel(nil)
		return nil, fmt.Errorf("%w: GET %s: %s", ErrItem, rawURL, resp.Status)
	}
	body := &idleBody{body: resp.Body, ctx: ctx, cancel: cancel, timer: stall, idle: idle, url: rawURL}
	return &Stream{ReadCloser: body, Version: resp.Header.Get("ETag"), Size: resp.ContentLength}, nil
}

// idleBody fails a read that waits more than idle for bytes.
type idleBody struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
	url    string
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.idle)
	n, err := b.body.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF {
		if cause := context.Cause(b.ctx); cause != nil {
			return n, cause
		}
		return n, fmt.Errorf("%w: GET %s: %w", ErrItem, b.url, err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	defer b.cancel(nil)
	return b.body.Close()
}

func (u *URLs) get(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrItem, rawURL, err)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: GET %s: %w", ErrItem, rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: GET %s: %s", ErrItem, rawURL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrItem, rawURL, err)
	}
	return b, nil
}
