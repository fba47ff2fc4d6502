package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options configure the S3 client. The zero value uses AWS with the
// standard credential chain.
type S3Options struct {
	// Endpoint is a custom S3-compatible server (MinIO, Ceph, R2, GCS
	// interop): host:port or an http(s) URL. Empty: AWS_ENDPOINT_URL_S3,
	// then AWS_ENDPOINT_URL, then s3.amazonaws.com. A custom endpoint is
	// addressed path-style (http://host/bucket/key).
	Endpoint string
	// Region is the bucket's region (default AWS_REGION, then
	// AWS_DEFAULT_REGION, else found by the client).
	Region string
	// Glob keeps only objects whose base name matches (path.Match), like
	// --glob on a local folder.
	Glob string
	// Timeout bounds each request's wait for the server's response headers
	// (default 30s): a server that stalls mid-listing errs instead of
	// hanging, and the listing resumes from its last key.
	Timeout time.Duration
	// PageSize is how many keys one ListObjectsV2 call returns (default
	// 1000, S3's maximum).
	PageSize int
	// Creds overrides the credential chain (tests).
	Creds *credentials.Credentials
}

// S3 lists objects under a bucket prefix.
type S3 struct {
	client         *minio.Client
	bucket, prefix string
	glob           string
	pageSize       int
}

// ParseS3URI splits s3://bucket/prefix.
func ParseS3URI(uri string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not an s3:// URI: use s3://bucket/prefix", ErrUsage, uri)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%w: %q names no bucket: use s3://bucket/prefix", ErrUsage, uri)
	}
	return bucket, prefix, nil
}

// NewS3Client builds a client for opts: credentials from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the
// shared files (~/.aws/credentials and config, AWS_PROFILE), then the
// instance's IAM role.
func NewS3Client(opts S3Options) (*minio.Client, error) {
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	}
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	custom := endpoint != ""
	secure := true
	if !custom {
		endpoint = "s3.amazonaws.com"
	} else if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("%w: endpoint %q: use host:port or http(s)://host:port (--s3-endpoint or AWS_ENDPOINT_URL)", ErrUsage, endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	region := opts.Region
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	creds := opts.Creds
	if creds == nil {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	mo := &minio.Options{Creds: creds, Secure: secure, Region: region, Transport: tr, MaxRetries: 3}
	if custom {
		mo.BucketLookup = minio.BucketLookupPath
	}
	c, err := minio.New(endpoint, mo)
	if err != nil {
		return nil, fmt.Errorf("%w: S3 client for %s: %w", ErrUsage, endpoint, err)
	}
	return c, nil
}

// NewS3 returns the source for uri (s3://bucket/prefix).
func NewS3(uri string, opts S3Options) (*S3, error) {
	bucket, prefix, err := ParseS3URI(uri)
	if err != nil {
		return nil, err
	}
	if opts.Glob != "" {
		if _, err := path.Match(opts.Glob, ""); err != nil {
			return nil, fmt.Errorf("%w: --glob %q: %v", ErrUsage, opts.Glob, err)
		}
	}
	c, err := NewS3Client(opts)
	if err != nil {
		return nil, err
	}
	return &S3{client: c, bucket: bucket, prefix: prefix, glob: opts.Glob, pageSize: opts.PageSize}, nil
}

// URI is s3://bucket/prefix.
func (s *S3) URI() string { return "s3://" + s.bucket + "/" + s.prefix }

// Resumable: keys are unique and listed in lexical order.
func (s *S3) Resumable() bool { return true }

// Check lists one key: a missing bucket, a denied prefix or bad
// credentials fail here, before anything is queued.
func (s *S3) Check(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the client's paging after the first key
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true, MaxKeys: 1}) {
		if o.Err != nil {
			return s.accessError(o.Err)
		}
		break // one is enough
	}
	return context.Cause(ctx)
}

func (s *S3) accessError(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchBucket":
		return fmt.Errorf("%w: %s: no such bucket (check the name and --s3-endpoint): %w", ErrAccess, s.URI(), err)
	case "AccessDenied", "AllAccessDisabled":
		return fmt.Errorf("%w: %s: access denied: the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE or the instance role) need s3:ListBucket on the bucket and s3:GetObject on the prefix: %w", ErrAccess, s.URI(), err)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken":
		return fmt.Errorf("%w: %s: the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE): %w", ErrAccess, s.URI(), err)
	}
	if r := minio.ToErrorResponse(err); r.Code == "" || r.StatusCode >= 500 {
		return fmt.Errorf("%w: list %s (check --s3-endpoint / AWS_ENDPOINT_URL and that the server runs): %w", ErrUnavailable, s.URI(), err)
	}
	return fmt.Errorf("%w: list %s: %w", ErrAccess, s.URI(), err)
}

// ListError is a listing that failed part way; After is the last key
// listed, where a new listing resumes.
type ListError struct {
	After string
	Err   error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("listing stopped after key %q: %v", e.After, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

// List streams the objects after key after (in pages of 1000: memory
// stays flat however many there are). A failure part way returns a
// *ListError with the last key listed.
func (s *S3) List(ctx context.Context, after string, fn func(Item) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the client's paging goroutine when fn fails
	last := after
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true, StartAfter: after, MaxKeys: s.pageSize}) {
		if o.Err != nil {
			if err := context.Cause(ctx); err != nil {
				return err
			}
			if last == "" {
				if c := minio.ToErrorResponse(o.Err).Code; c == "NoSuchBucket" || c == "AccessDenied" {
					return s.accessError(o.Err)
				}
			}
			return &ListError{After: last, Err: o.Err}
		}
		last = o.Key
		if strings.HasSuffix(o.Key, "/") {
			continue // a folder marker
		}
		if s.glob != "" {
			if ok, _ := path.Match(s.glob, path.Base(o.Key)); !ok {
				continue
			}
		}
		if err := fn(s.item(o)); err != nil {
			return err
		}
	}
	return context.Cause(ctx)
}

func (s *S3) item(o minio.ObjectInfo) Item {
	uri := "s3://" + s.bucket + "/" + o.Key
	key := o.Key
	return Item{
		ID: uri, URI: uri, Size: o.Size, Version: strings.Trim(o.ETag, `"`), Position: o.Key,
		fetch: func(ctx context.Context, limit int64) ([]byte, error) {
			return getObject(ctx, s.client, s.bucket, key, limit)
		},
		open: func(ctx context.Context) (*Stream, error) {
			return openObject(ctx, s.client, s.bucket, key)
		},
		name: path.Base(key),
	}
}

// openObject starts reading an object; reading it fails with the object's
// own error (ErrItem) as getObject does.
func openObject(ctx context.Context, c *minio.Client, bucket, key string) (*Stream, error) {
	uri := "s3://" + bucket + "/" + key
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, objectError(uri, err)
	}
	info, err := obj.Stat() // sends the request: a deleted object fails here
	if err != nil {
		obj.Close()
		return nil, objectError(uri, err)
	}
	return &Stream{ReadCloser: objectReader{obj, uri}, Version: strings.Trim(info.ETag, `"`), Size: info.Size}, nil
}

// objectReader names the object in a read's error.
type objectReader struct {
	*minio.Object
	uri string
}

func (o objectReader) Read(b []byte) (int, error) {
	n, err := o.Object.Read(b)
	if err != nil && err != io.EOF {
		err = objectError(o.uri, err)
	}
	return n, err
}

// getObject reads an object, at most limit+1 bytes.
func getObject(ctx context.Context, c *minio.Client, bucket, key string, limit int64) ([]byte, error) {
	uri := "s3://" + bucket + "/" + key
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, objectError(uri, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, limit+1))
	if err != nil {
		return nil, objectError(uri, err)
	}
	return b, nil
}

func objectError(uri string, err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey":
		return fmt.Errorf("%w: %s was deleted after it was listed (run again to pick up what changed)", ErrItem, uri)
	case "AccessDenied":
		return fmt.Errorf("%w: %s: access denied: the credentials need s3:GetObject on it", ErrItem, uri)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: read %s: %w", ErrItem, uri, err)
}

// ValidPosition reports whether a remembered listing position can be a
// key of this source (it is under the prefix).
func (s *S3) ValidPosition(p string) bool { return strings.HasPrefix(p, s.prefix) }
