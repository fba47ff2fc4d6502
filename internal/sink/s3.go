package sink

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/extractq/extractq/internal/source"
)

// UploadPartSize is the size of each part of an upload: what an upload
// holds in memory.
const UploadPartSize = 16 << 20

// UploadS3 streams what write writes to the object uri (s3://bucket/key)
// as a multipart upload of UploadPartSize parts: nothing is staged on
// disk, and a failed write aborts the upload (no partial object appears).
func UploadS3(ctx context.Context, uri string, opts source.S3Options, contentType string, write func(io.Writer) error) (int64, error) {
	bucket, key, err := source.ParseS3URI(uri)
	if err != nil {
		return 0, err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return 0, fmt.Errorf("%w: --to %s names no object: add a file name, e.g. %sresults.parquet", source.ErrUsage, uri, strings.TrimSuffix(uri, "/")+"/")
	}
	c, err := source.NewS3Client(opts)
	if err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { // owned here: ends when the pipe closes, waited for below
		err := write(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	info, err := c.PutObject(ctx, bucket, key, pr, -1, minio.PutObjectOptions{PartSize: UploadPartSize, ContentType: contentType})
	pr.CloseWithError(err) // unblocks the writer if the upload failed first
	if werr := <-done; werr != nil {
		return 0, werr
	}
	if err != nil {
		return 0, fmt.Errorf("upload %s: %w", uri, err)
	}
	return info.Size, nil
}
