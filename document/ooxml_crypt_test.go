package document

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb"
	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// testSpin hashes a password as MS-OFFCRYPTO 2.3.4.7 and 2.3.4.11 say,
// written apart from the reader's: H(salt + UTF-16LE password), then
// H(LE32 i + previous) spin times.
func testSpin(hash func([]byte) []byte, salt []byte, password string, spin int) []byte {
	var pw []byte
	for _, c := range utf16.Encode([]rune(password)) {
		pw = append(pw, byte(c), byte(c>>8))
	}
	sum := hash(append(append([]byte{}, salt...), pw...))
	for i := range spin {
		sum = hash(append(binary.LittleEndian.AppendUint32(nil, uint32(i)), sum...))
	}
	return sum
}

func sha512Of(b []byte) []byte { s := sha512.Sum512(b); return s[:] }
func sha1Of(b []byte) []byte   { s := sha1.Sum(b); return s[:] }

func cbcEncrypt(t testing.TB, key, iv, b []byte) []byte {
	t.Helper()
	c, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	b = append(append([]byte{}, b...), make([]byte, (16-len(b)%16)%16)...)
	out := make([]byte, len(b))
	cipher.NewCBCEncrypter(c, iv[:16]).CryptBlocks(out, b)
	return out
}

// agileEncrypted wraps a package as Office 2010 and later (and
// xlsx-populate) write it: agile encryption, AES-256, SHA-512.
func agileEncrypted(t testing.TB, pkg []byte, password string, spin int) []byte {
	keySalt, pwSalt := []byte("0123456789abcdef"), []byte("fedcba9876543210")
	secret, verifier := []byte("0123456789ABCDEF0123456789ABCDEF"), []byte("verifier-16bytes")
	base := testSpin(sha512Of, pwSalt, password, spin)
	key := func(block []byte) []byte { return sha512Of(append(append([]byte{}, base...), block...))[:32] }
	b64 := base64.StdEncoding.EncodeToString
	var data []byte
	for i := 0; i < len(pkg); i += 4096 {
		iv := sha512Of(binary.LittleEndian.AppendUint32(append([]byte{}, keySalt...), uint32(i/4096)))
		data = append(data, cbcEncrypt(t, secret, iv, pkg[i:min(i+4096, len(pkg))])...)
	}
	params := `saltSize="16" blockSize="16" keyBits="256" hashSize="64" cipherAlgorithm="AES" cipherChaining="ChainingModeCBC" hashAlgorithm="SHA512"`
	info := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\r\n" +
		`<encryption xmlns="http://schemas.microsoft.com/office/2006/encryption" xmlns:p="http://schemas.microsoft.com/office/2006/keyEncryptor/password">` +
		`<keyData ` + params + ` saltValue="` + b64(keySalt) + `"/><keyEncryptors><keyEncryptor uri="http://schemas.microsoft.com/office/2006/keyEncryptor/password">` +
		`<p:encryptedKey spinCount="` + strconv.Itoa(spin) + `" ` + params + ` saltValue="` + b64(pwSalt) + `"` +
		` encryptedVerifierHashInput="` + b64(cbcEncrypt(t, key([]byte{0xfe, 0xa7, 0xd2, 0x76, 0x3b, 0x4b, 0x9e, 0x79}), pwSalt, verifier)) + `"` +
		` encryptedVerifierHashValue="` + b64(cbcEncrypt(t, key([]byte{0xd7, 0xaa, 0x0f, 0x6d, 0x30, 0x61, 0x34, 0x4e}), pwSalt, sha512Of(verifier))) + `"` +
		` encryptedKeyValue="` + b64(cbcEncrypt(t, key([]byte{0x14, 0x6e, 0x0b, 0xe7, 0xab, 0xac, 0xd0, 0xd6}), pwSalt, secret)) + `"/>` +
		`</keyEncryptor></keyEncryptors></encryption>`
	return cfbtest.Build([]cfbtest.Stream{
		{Path: "EncryptionInfo", Data: append([]byte{4, 0, 4, 0, 0x40, 0, 0, 0}, info...)},
		{Path: "EncryptedPackage", Data: append(binary.LittleEndian.AppendUint64(nil, uint64(len(pkg))), data...)},
	}, cfbtest.Options{})
}

// standardEncrypted wraps a package as Office 2007 does: standard
// encryption, AES-128 in ECB, SHA-1 50,000 times.
func standardEncrypted(t testing.TB, pkg []byte, password string) []byte {
	salt, verifier := []byte("salt-of-16-bytes"), []byte("verifier-16bytes")
	hfinal := sha1Of(append(testSpin(sha1Of, salt, password, 50000), 0, 0, 0, 0))
	x := func(fill byte) []byte {
		buf := bytes.Repeat([]byte{fill}, 64)
		for i, c := range hfinal {
			buf[i] ^= c
		}
		return sha1Of(buf)
	}
	c, err := aes.NewCipher(x(0x36)[:16])
	if err != nil {
		t.Fatal(err)
	}
	ecb := func(b []byte) []byte {
		b = append(append([]byte{}, b...), make([]byte, (16-len(b)%16)%16)...)
		out := make([]byte, len(b))
		for i := 0; i < len(b); i += 16 {
			c.Encrypt(out[i:], b[i:i+16])
		}
		return out
	}
	le := binary.LittleEndian.AppendUint32
	var hdr []byte
	for _, v := range []uint32{0x24, 0, 0x660E, 0x8004, 128, 0x18, 0, 0} {
		hdr = le(hdr, v)
	}
	info := le([]byte{3, 0, 2, 0, 0x24, 0, 0, 0}, uint32(len(hdr)))
	info = append(info, hdr...)
	info = append(le(info, 16), salt...)
	info = append(info, ecb(verifier)...)
	info = append(le(info, 20), ecb(sha1Of(verifier))...)
	return cfbtest.Build([]cfbtest.Stream{
		{Path: "EncryptionInfo", Data: info},
		{Path: "EncryptedPackage", Data: append(binary.LittleEndian.AppendUint64(nil, uint64(len(pkg))), ecb(pkg)...)},
	}, cfbtest.Options{})
}

// TestEncryptedOOXML: a password-protected XLSX or DOCX (agile
// encryption, as xlsx-populate's examples/encryption/in.xlsx and every
// Office since 2010 write it; standard, as Office 2007) is read with
// its password, Locked; a wrong password and none are ErrEncrypted, each
// saying so. It was refused whatever the password.
func TestEncryptedOOXML(t *testing.T) {
	t.Parallel()
	xlsx := zipOf(t,
		"[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`,
		"_rels/.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
		"xl/workbook.xml", `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`,
		"xl/worksheets/sheet1.xml", `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>SECRET</t></is></c></row></sheetData></worksheet>`)
	// A document over two 4096-byte segments, each with its own IV.
	var body strings.Builder
	for i := range 900 {
		body.WriteString(`<w:p><w:r><w:t>` + strconv.Itoa(i*7919%1000003) + `</w:t></w:r></w:p>`)
	}
	docx := docxOf(t, `<w:p><w:r><w:t>Salary review</w:t></w:r></w:p>`+body.String()+`<w:p><w:r><w:t>end of review</w:t></w:r></w:p>`)
	if len(docx) <= 4096 {
		t.Fatalf("docx of %d bytes: want more than one segment", len(docx))
	}
	tests := []struct {
		name, password string
		file           []byte
		format, want   string
		err            string
	}{
		{"agile.xlsx", "open sesame", agileEncrypted(t, xlsx, "open sesame", 100000), "xlsx", "A1: SECRET", ""},
		{"agile.docx", "pässwörd 𝄞", agileEncrypted(t, docx, "pässwörd 𝄞", 1000), "docx", "end of review", ""},
		{"standard.xlsx", "2007", standardEncrypted(t, xlsx, "2007"), "xlsx", "A1: SECRET", ""},
		{"wrong.xlsx", "open sesame!", agileEncrypted(t, xlsx, "open sesame", 1000), "", "", "does not open it"},
		{"wrong-standard.xlsx", "2010", standardEncrypted(t, xlsx, "2007"), "", "", "does not open it"},
		{"none.xlsx", "", agileEncrypted(t, xlsx, "open sesame", 1000), "", "", "pass its password (Options.Password)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.file, Options{Name: tc.name, Password: tc.password})
			if tc.err != "" {
				if !errors.Is(err, ErrEncrypted) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want ErrEncrypted saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != tc.format || !d.Locked || !strings.Contains(d.Text, tc.want) {
				t.Errorf("format %s, locked %v, text %.80q…: want %s, locked, %q", d.Format, d.Locked, d.Text, tc.format, tc.want)
			}
		})
	}
}

// FuzzEncryptedOOXML fuzzes the two streams of a password-protected
// package, read with the password.
func FuzzEncryptedOOXML(f *testing.F) {
	pkg := docxOf(f, `<w:p><w:r><w:t>fuzz</w:t></w:r></w:p>`)
	for _, b := range [][]byte{agileEncrypted(f, pkg, "pw", 10), standardEncrypted(f, pkg, "pw")} {
		r, err := cfb.Open(bytes.NewReader(b), int64(len(b)), cfb.Limits{})
		if err != nil {
			f.Fatal(err)
		}
		info, _ := r.ReadStream("EncryptionInfo")
		data, _ := r.ReadStream("EncryptedPackage")
		f.Add(info, data)
	}
	f.Fuzz(func(t *testing.T, info, data []byte) {
		b := cfbtest.Build([]cfbtest.Stream{{Path: "EncryptionInfo", Data: info}, {Path: "EncryptedPackage", Data: data}}, cfbtest.Options{})
		d, err := ReadBytes(t.Context(), b, Options{Name: "fuzz.docx", Password: "pw", Limits: fuzzLimits})
		if err != nil {
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if !d.Locked {
			t.Fatal("read without being Locked")
		}
	})
}
