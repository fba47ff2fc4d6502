package document

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Signed files (CMS, PKCS #7 SignedData): a .p7m is a file wrapped with
// its signature — Italy's e-invoices (FatturaPA, IT…_FPA01.xml.p7m),
// documents signed with a smart card, an S/MIME message signed opaquely
// (smime.p7m). The signature is not verified: extractq reads what was
// signed, so a .p7m reads as the file inside it, by that file's format.
// CMS is BER, in practice with indefinite lengths and the content cut
// into pieces (what OpenSSL and the card tools write), which
// encoding/asn1 (DER only) does not read: hence the small walker below.

func init() {
	Register(Format{Name: "p7m", MediaType: "application/pkcs7-mime", Extensions: []string{".p7m", ".p7"}, Version: "1",
		Match:   func(head []byte, _ io.ReaderAt, _ int64) bool { return cmsPrefix(head) || cmsPrefix(base64Head(head)) },
		Decoder: DecoderFunc(decodeP7M)})
}

// The content types read here, as DER object identifier bytes.
var (
	oidSignedData        = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02}             // 1.2.840.113549.1.7.2
	oidEnvelopedData     = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x03}             // 1.2.840.113549.1.7.3
	oidAuthEnvelopedData = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x10, 0x01, 0x17} // 1.2.840.113549.1.9.16.1.23
)

// errCMSEncrypted is an encrypted message or file: without its key there
// is nothing to read.
// Not ErrEncrypted: no password opens it.
var errCMSEncrypted = fmt.Errorf("%w: it is encrypted for its recipient (S/MIME, CMS EnvelopedData): decrypt it first (openssl cms -decrypt -recip CERT -inkey KEY)", ErrUnsupported)

// cmsPrefix says whether b starts a CMS ContentInfo of signed or
// encrypted data: a SEQUENCE, then the content type's identifier.
func cmsPrefix(b []byte) bool {
	if len(b) < 2 || b[0] != 0x30 {
		return false
	}
	i := 2
	switch l := b[1]; {
	case l == 0x80 || l < 0x80:
	case l <= 0x84:
		i += int(l & 0x7f)
	default:
		return false
	}
	if len(b) < i+2 || b[i] != 0x06 {
		return false
	}
	oid := b[i+2 : min(len(b), i+2+int(b[i+1]))]
	return bytes.Equal(oid, oidSignedData) || bytes.Equal(oid, oidEnvelopedData) || bytes.Equal(oid, oidAuthEnvelopedData)
}

// base64Head decodes the start of a base64 or PEM file (a .p7m sent as
// text), enough for cmsPrefix; nil when it is not base64.
func base64Head(head []byte) []byte {
	s := string(head)
	if _, after, ok := strings.Cut(s, "-----BEGIN "); ok {
		if _, body, ok := strings.Cut(after, "-----"); ok {
			s = body
		}
	}
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	s = s[:min(len(s), 64)/4*4]
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// decodeP7M reads a signed file as the file it holds.
func decodeP7M(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	if !cmsPrefix(b) {
		if d, err := decodeBase64Text(b); err == nil {
			b = d
		}
	}
	content, err := cmsContent(b)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(strings.TrimSuffix(opts.Name, ".p7m"), ".P7M")
	inner := ReadChild(ctx, opts, name, content)
	if inner.Err != nil {
		return nil, fmt.Errorf("the signed file: %w", inner.Err)
	}
	return inner, nil
}

// decodeBase64Text decodes a base64 or PEM file.
func decodeBase64Text(b []byte) ([]byte, error) {
	s := string(b)
	if _, after, ok := strings.Cut(s, "-----BEGIN "); ok {
		if _, body, ok := strings.Cut(after, "-----"); ok {
			s, _, _ = strings.Cut(body, "-----END")
		}
	}
	s = strings.Join(strings.Fields(s), "")
	return base64.StdEncoding.DecodeString(s)
}

// cmsContent returns what a CMS SignedData signs (its encapsulated
// content). An encrypted one is errCMSEncrypted; a detached signature
// (the signed file travels apart) or anything else malformed is
// ErrCorrupt.
func cmsContent(b []byte) ([]byte, error) {
	corrupt := func(what string) error {
		return fmt.Errorf("%w: the signed file (CMS/PKCS #7) is malformed: %s", ErrCorrupt, what)
	}
	_, info, _, err := berNext(b, 0)
	if err != nil {
		return nil, corrupt(err.Error())
	}
	tag, oid, rest, err := berNext(info, 0)
	if err != nil || tag != 0x06 {
		return nil, corrupt("no content type")
	}
	switch {
	case bytes.Equal(oid, oidEnvelopedData), bytes.Equal(oid, oidAuthEnvelopedData):
		return nil, errCMSEncrypted
	case !bytes.Equal(oid, oidSignedData):
		return nil, fmt.Errorf("%w: a CMS/PKCS #7 file of another kind than signed data", ErrUnsupported)
	}
	// content [0] EXPLICIT SignedData ::= SEQUENCE { version, digest
	// algorithms SET, encapsulated content SEQUENCE, … }
	steps := []struct {
		tag  byte
		what string
		into bool // read on inside it, else after it
	}{
		{0xa0, "content", true}, {0x30, "SignedData", true}, {0x02, "version", false},
		{0x31, "digest algorithms", false}, {0x30, "encapsulated content", true},
	}
	eci := rest
	for _, st := range steps {
		tag, body, next, err := berNext(eci, 0)
		if err != nil || tag != st.tag {
			return nil, corrupt("no " + st.what)
		}
		eci = next
		if st.into {
			eci = body
		}
	}
	tag, _, rest, err = berNext(eci, 0) // eContentType
	if err != nil || tag != 0x06 {
		return nil, corrupt("no encapsulated content type")
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: a detached signature (the signed file travels apart from it): read that file instead", ErrUnsupported)
	}
	tag, explicit, _, err := berNext(rest, 0)
	if err != nil || tag != 0xa0 {
		return nil, corrupt("no encapsulated content")
	}
	tag, octets, _, err := berNext(explicit, 0)
	if err != nil {
		return nil, corrupt(err.Error())
	}
	content, err := berOctets(tag, octets, 0)
	if err != nil {
		return nil, corrupt(err.Error())
	}
	return content, nil
}

// maxBERDepth bounds nesting: deeper is a crafted file.
const maxBERDepth = 32

// berNext reads one BER element from b: its identifier octet (tags above
// 30 are refused: CMS uses none), its contents and what follows it. An
// indefinite length ends at the end-of-contents octets of its own level.
func berNext(b []byte, depth int) (tag byte, body, rest []byte, err error) {
	if depth > maxBERDepth {
		return 0, nil, nil, errors.New("nested too deep")
	}
	if len(b) < 2 {
		return 0, nil, nil, errors.New("cut short")
	}
	tag = b[0]
	if tag&0x1f == 0x1f {
		return 0, nil, nil, errors.New("a high tag number")
	}
	l := int(b[1])
	i := 2
	switch {
	case l < 0x80:
	case l == 0x80: // indefinite: contents up to the matching 00 00
		if tag&0x20 == 0 {
			return 0, nil, nil, errors.New("an indefinite length on a primitive element")
		}
		for p := b[2:]; ; {
			if len(p) >= 2 && p[0] == 0 && p[1] == 0 {
				end := len(b) - len(p)
				return tag, b[2:end], b[end+2:], nil
			}
			_, _, next, err := berNext(p, depth+1)
			if err != nil {
				return 0, nil, nil, err
			}
			p = next
		}
	case l <= 0x84:
		n := l & 0x7f
		if len(b) < 2+n {
			return 0, nil, nil, errors.New("cut short")
		}
		l = 0
		for _, c := range b[2 : 2+n] {
			l = l<<8 | int(c)
		}
		i += n
		if l < 0 {
			return 0, nil, nil, errors.New("a length out of range")
		}
	default:
		return 0, nil, nil, errors.New("a length out of range")
	}
	if l > len(b)-i {
		return 0, nil, nil, errors.New("cut short")
	}
	return tag, b[i : i+l], b[i+l:], nil
}

// berOctets is an OCTET STRING's bytes: primitive, or constructed of
// pieces (each an OCTET STRING again) joined.
func berOctets(tag byte, body []byte, depth int) ([]byte, error) {
	switch tag {
	case 0x04:
		return body, nil
	case 0x24:
		var out []byte
		for len(body) > 0 {
			t, b, rest, err := berNext(body, depth+1)
			if err != nil {
				return nil, err
			}
			piece, err := berOctets(t, b, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, piece...)
			body = rest
		}
		return out, nil
	}
	return nil, fmt.Errorf("the content is not an octet string (tag %#x)", tag)
}
