package document

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/extractq/extractq/document/internal/cfb"
)

// Objects embedded in the legacy binaries: a Word .doc keeps each in a
// storage of its ObjectPool ("ObjectPool/_1234567"), an Excel .xls in a
// storage at its root named MBD and a number ("MBD0049DB15"), a
// PowerPoint .ppt in a record of its stream (pptObjects). Each storage
// is laid out as an oleObject*.bin's root (oleStorageFile): a Packager
// file, an OOXML package, a PDF, or a Word, Excel or PowerPoint binary
// whose streams are the storage's own.

// oleObjectStorages lists the object storages of an open compound file:
// a .doc's (word) or an .xls's, in the file's order.
func oleObjectStorages(f *cfb.File, word bool) []string {
	var out []string
	if word {
		for _, e := range f.Children("ObjectPool") {
			if e.Type == cfb.TypeStorage {
				out = append(out, e.Path)
			}
		}
		return out
	}
	for _, e := range f.Children("") {
		if e.Type == cfb.TypeStorage && strings.HasPrefix(strings.ToUpper(e.Name), "MBD") {
			out = append(out, e.Path)
		}
	}
	return out
}

// readOLEObjects reads each object storage as a child document, as
// readEmbedded reads an OOXML package's oleObject*.bin: a packed file
// under its own name, anything else under the storage's name with the
// extension of what it was read as (_1234567.xls); a legacy binary is
// taken out of the file as a compound file of its own (cfb.Extract),
// which is what the child keeps as its bytes. Objects of no kind read
// here (an equation, a drawing) are passed over: their preview is in the
// document. One that cannot be read is a child with its error; a limit
// stops the document.
func readOLEObjects(ctx context.Context, f *cfb.File, dirs []string, opts *Options) ([]*Document, error) {
	var out []*Document
	for _, dir := range dirs {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		name := path.Base(dir)
		fname, data, ok, err := oleStorageFile(f, dir)
		if err == nil && ok && data == nil {
			if data, err = f.Extract(dir); err != nil {
				err = cfbErr("the embedded object "+name, err)
			}
		}
		if err == nil && !ok {
			continue
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		if err != nil {
			if isLimitErr(err) {
				return nil, err
			}
			out = append(out, &Document{Name: name, Err: &Error{Name: name, Err: err}})
			continue
		}
		c := ReadChild(ctx, opts, cmpName(fname, name), data)
		if ext := kindExt(c); fname == "" && ext != "" {
			c.Name += ext
			if e, ok := c.Err.(*Error); ok {
				e.Name = c.Name
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// pptExOleObjStg is a PowerPoint 97-2003 embedded object's storage
// record ([MS-PPT] 2.10.34): the object's compound file, zlib-compressed
// after its size when the record's instance is 1.
const pptExOleObjStg = 0x1011

// pptObjects reads the objects embedded in a .ppt's "PowerPoint Document"
// stream b as child documents named "Object N" (with the extension of
// what each holds, as embeddedChild names them), in stream order: those
// the persist directory points to, or, without a usable one, every
// top-level ExOleObjStg record.
func pptObjects(ctx context.Context, b []byte, persist map[uint32]int64, opts *Options) ([]*Document, error) {
	var offs []int64
	if len(persist) > 0 {
		for _, off := range persist {
			offs = append(offs, off)
		}
		slices.Sort(offs)
		offs = slices.Compact(offs)
	} else {
		for off := int64(0); ; {
			_, next, ok := pptAt(b, off)
			if !ok {
				break
			}
			offs = append(offs, off)
			off = next
		}
	}
	max := opts.Limits.withDefaults().MaxUnpacked
	var out []*Document
	for _, off := range offs {
		r, _, ok := pptAt(b, off)
		if !ok || r.typ != pptExOleObjStg {
			continue
		}
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		name := "Object " + strconv.Itoa(len(out)+1)
		data := r.data
		if r.instance == 1 {
			var err error
			if data, err = pptInflate(r.data, max); err != nil {
				if isLimitErr(err) || errors.Is(err, ErrBomb) {
					return nil, err
				}
				out = append(out, &Document{Name: name, Err: &Error{Name: name, Err: err}})
				continue
			}
		}
		c, err := embeddedChild(ctx, name, data, opts)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// pptInflate decompresses a compressed ExOleObjStg body: the size of the
// object, then its zlib stream; more than max bytes is ErrBomb.
func pptInflate(b []byte, max int64) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: a compressed embedded object of %d bytes", ErrCorrupt, len(b))
	}
	size := int64(binary.LittleEndian.Uint32(b))
	if size > max {
		return nil, fmt.Errorf("%w: an embedded object of %d bytes, past Limits.MaxUnpacked (%d)", ErrBomb, size, max)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[4:]))
	if err != nil {
		return nil, fmt.Errorf("%w: the embedded object's zlib stream: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, size+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: the embedded object's zlib stream: %v", ErrCorrupt, err)
	case int64(len(out)) != size:
		return nil, fmt.Errorf("%w: the embedded object inflates to other than its %d bytes", ErrCorrupt, size)
	}
	return out, nil
}
