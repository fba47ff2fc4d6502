package document

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb"
)

// A password-protected DOCX, XLSX or PPTX is an OLE compound file whose
// EncryptionInfo stream says how the key comes from the password and whose
// EncryptedPackage stream is the zip, encrypted (ECMA-376 part 2, MS-OFFCRYPTO
// 2.3.4): agile encryption (Office 2010 and later, and every library that
// writes one: AES with SHA-1 to SHA-512, the key hashed spinCount times) and
// standard encryption (Office 2007: AES-ECB, SHA-1, 50,000 times).

// errWrongPassword is the error of a password that does not open the package.
var errWrongPassword = fmt.Errorf("%w: the password given does not open it", ErrEncrypted)

// maxSpinCount bounds the hashing a file asks for: Office writes 100,000;
// ten million would take seconds a file.
const maxSpinCount = 10_000_000

// readEncryptedPackage decrypts a password-protected OOXML package with
// opts.Password and reads the package it holds, marked Locked: it opened
// only with the password.
func readEncryptedPackage(ctx context.Context, f *cfb.File, opts *Options) (*Document, error) {
	if opts.Password == "" {
		return nil, encryptedPackage
	}
	info, err := f.ReadStream("EncryptionInfo")
	if err != nil {
		return nil, cfbErr("the encryption info", err)
	}
	pkg, err := f.ReadStream("EncryptedPackage")
	if err != nil {
		return nil, cfbErr("the encrypted package", err)
	}
	plain, err := decryptPackage(info, pkg, opts.Password)
	if err != nil {
		return nil, err
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	child := *opts
	child.Format = ""
	doc, err := Read(ctx, bytes.NewReader(plain), int64(len(plain)), child)
	if err != nil {
		var de *Error
		if errors.As(err, &de) {
			// The inner package's failure is the document's, as it stands.
			return nil, de.Err
		}
		return nil, err
	}
	doc.Locked = true
	return doc, nil
}

// decryptPackage decrypts an EncryptedPackage stream with the key the
// EncryptionInfo stream and the password give.
func decryptPackage(info, pkg []byte, password string) ([]byte, error) {
	if len(info) < 8 || len(pkg) < 8 {
		return nil, fmt.Errorf("%w: the encryption info or package is cut short", ErrCorrupt)
	}
	size := binary.LittleEndian.Uint64(pkg)
	data := pkg[8:]
	if size > uint64(len(data)) {
		return nil, fmt.Errorf("%w: the encrypted package says %d bytes and holds %d", ErrCorrupt, size, len(data))
	}
	major, minor := binary.LittleEndian.Uint16(info), binary.LittleEndian.Uint16(info[2:])
	var (
		plain []byte
		err   error
	)
	switch {
	case major == 4 && minor == 4:
		plain, err = decryptAgile(info[8:], data, password)
	case (major == 2 || major == 3 || major == 4) && minor == 2:
		plain, err = decryptStandard(info[8:], data, password)
	default:
		return nil, fmt.Errorf("%w: an encryption this reader does not know (version %d.%d); save an unprotected copy and submit that", ErrEncrypted, major, minor)
	}
	if err != nil {
		return nil, err
	}
	if uint64(len(plain)) < size || !bytes.HasPrefix(plain, []byte("PK\x03\x04")) {
		return nil, fmt.Errorf("%w: the decrypted package is no zip", ErrCorrupt)
	}
	return plain[:size], nil
}

// passwordUTF16 is the password as the key derivation hashes it.
func passwordUTF16(password string) []byte {
	u := utf16.Encode([]rune(password))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return b
}

// spunHash is H(salt + password), then spinCount times H(i + previous).
func spunHash(newHash func() hash.Hash, salt, password []byte, spinCount int) []byte {
	h := newHash()
	h.Write(salt)
	h.Write(password)
	sum := h.Sum(nil)
	var it [4]byte
	for i := range spinCount {
		binary.LittleEndian.PutUint32(it[:], uint32(i))
		h.Reset()
		h.Write(it[:])
		h.Write(sum)
		sum = h.Sum(sum[:0])
	}
	return sum
}

// agileEncryption is the EncryptionInfo XML of agile encryption.
type agileEncryption struct {
	KeyData       agileParams `xml:"keyData"`
	KeyEncryptors []struct {
		URI          string `xml:"uri,attr"`
		EncryptedKey struct {
			agileParams
			SpinCount                  int    `xml:"spinCount,attr"`
			EncryptedVerifierHashInput string `xml:"encryptedVerifierHashInput,attr"`
			EncryptedVerifierHashValue string `xml:"encryptedVerifierHashValue,attr"`
			EncryptedKeyValue          string `xml:"encryptedKeyValue,attr"`
		} `xml:"encryptedKey"`
	} `xml:"keyEncryptors>keyEncryptor"`
}

type agileParams struct {
	KeyBits         int    `xml:"keyBits,attr"`
	HashSize        int    `xml:"hashSize,attr"`
	BlockSize       int    `xml:"blockSize,attr"`
	CipherAlgorithm string `xml:"cipherAlgorithm,attr"`
	CipherChaining  string `xml:"cipherChaining,attr"`
	HashAlgorithm   string `xml:"hashAlgorithm,attr"`
	SaltValue       string `xml:"saltValue,attr"`
}

// hashOf names the hash agile encryption's hashAlgorithm names.
func hashOf(name string) func() hash.Hash {
	switch name {
	case "SHA1", "SHA-1":
		return sha1.New
	case "SHA256", "SHA-256":
		return sha256.New
	case "SHA384", "SHA-384":
		return sha512.New384
	case "SHA512", "SHA-512":
		return sha512.New
	}
	return nil
}

// fitKey truncates a hash to n bytes, or pads it with 0x36 (MS-OFFCRYPTO
// 2.3.4.11).
func fitKey(b []byte, n int) []byte {
	if len(b) >= n {
		return b[:n]
	}
	out := bytes.Repeat([]byte{0x36}, n)
	copy(out, b)
	return out
}

// cbcDecrypt decrypts AES-CBC; the input is cut to whole blocks.
func cbcDecrypt(key, iv, data []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	data = data[:len(data)/aes.BlockSize*aes.BlockSize]
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, fitKey(iv, aes.BlockSize)).CryptBlocks(out, data)
	return out, nil
}

// The block keys of agile encryption's password key encryptor.
var (
	blockVerifierInput = []byte{0xfe, 0xa7, 0xd2, 0x76, 0x3b, 0x4b, 0x9e, 0x79}
	blockVerifierHash  = []byte{0xd7, 0xaa, 0x0f, 0x6d, 0x30, 0x61, 0x34, 0x4e}
	blockKeyValue      = []byte{0x14, 0x6e, 0x0b, 0xe7, 0xab, 0xac, 0xd0, 0xd6}
)

// agileSegment is the size of the pieces the package is encrypted in,
// each with its own IV.
const agileSegment = 4096

func decryptAgile(xmlInfo, data []byte, password string) ([]byte, error) {
	var enc agileEncryption
	if err := xml.Unmarshal(xmlInfo, &enc); err != nil {
		return nil, fmt.Errorf("%w: the encryption info: %v", ErrCorrupt, err)
	}
	unsupported := func(what string) error {
		return fmt.Errorf("%w: encrypted with %s, which this reader does not decrypt; save an unprotected copy and submit that", ErrEncrypted, what)
	}
	kd := enc.KeyData
	for _, ke := range enc.KeyEncryptors {
		if ke.URI != "http://schemas.microsoft.com/office/2006/keyEncryptor/password" {
			continue
		}
		ek := ke.EncryptedKey
		for _, p := range []agileParams{kd, ek.agileParams} {
			if p.CipherAlgorithm != "AES" || (p.CipherChaining != "" && p.CipherChaining != "ChainingModeCBC") {
				return nil, unsupported(p.CipherAlgorithm + " " + p.CipherChaining)
			}
			if hashOf(p.HashAlgorithm) == nil {
				return nil, unsupported(p.HashAlgorithm)
			}
			if p.KeyBits != 128 && p.KeyBits != 192 && p.KeyBits != 256 {
				return nil, unsupported(fmt.Sprintf("a %d-bit key", p.KeyBits))
			}
		}
		if ek.SpinCount < 0 || ek.SpinCount > maxSpinCount {
			return nil, fmt.Errorf("%w: the encryption info asks for %d hash rounds", ErrCorrupt, ek.SpinCount)
		}
		b64 := func(s string) []byte {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil
			}
			return b
		}
		salt, keySalt := b64(ek.SaltValue), b64(kd.SaltValue)
		vInput, vHash, keyValue := b64(ek.EncryptedVerifierHashInput), b64(ek.EncryptedVerifierHashValue), b64(ek.EncryptedKeyValue)
		if len(salt) == 0 || len(keySalt) == 0 || len(vInput) == 0 || len(vHash) == 0 || len(keyValue) == 0 {
			return nil, fmt.Errorf("%w: the encryption info lacks a salt, verifier or key", ErrCorrupt)
		}
		newHash := hashOf(ek.HashAlgorithm)
		base := spunHash(newHash, salt, passwordUTF16(password), ek.SpinCount)
		key := func(block []byte) []byte {
			h := newHash()
			h.Write(base)
			h.Write(block)
			return fitKey(h.Sum(nil), ek.KeyBits/8)
		}
		verifier, err := cbcDecrypt(key(blockVerifierInput), salt, vInput)
		if err != nil {
			return nil, err
		}
		wantHash, err := cbcDecrypt(key(blockVerifierHash), salt, vHash)
		if err != nil {
			return nil, err
		}
		h := newHash()
		h.Write(verifier)
		sum := h.Sum(nil)
		if len(wantHash) < len(sum) || subtle.ConstantTimeCompare(sum, wantHash[:len(sum)]) != 1 {
			return nil, errWrongPassword
		}
		secret, err := cbcDecrypt(key(blockKeyValue), salt, keyValue)
		if err != nil {
			return nil, err
		}
		if len(secret) < kd.KeyBits/8 {
			return nil, fmt.Errorf("%w: the encrypted key is cut short", ErrCorrupt)
		}
		secret = secret[:kd.KeyBits/8]
		ivHash := hashOf(kd.HashAlgorithm)
		out := make([]byte, 0, len(data))
		var idx [4]byte
		for i := 0; i < len(data); i += agileSegment {
			binary.LittleEndian.PutUint32(idx[:], uint32(i/agileSegment))
			h := ivHash()
			h.Write(keySalt)
			h.Write(idx[:])
			seg, err := cbcDecrypt(secret, h.Sum(nil), data[i:min(i+agileSegment, len(data))])
			if err != nil {
				return nil, err
			}
			out = append(out, seg...)
		}
		return out, nil
	}
	return nil, unsupported("a certificate, not a password")
}

// decryptStandard decrypts ECMA-376 standard encryption: an
// EncryptionHeader (AES, SHA-1), an EncryptionVerifier, the package in
// AES-ECB.
func decryptStandard(info, data []byte, password string) ([]byte, error) {
	short := fmt.Errorf("%w: the encryption info is cut short", ErrCorrupt)
	if len(info) < 4 {
		return nil, short
	}
	hsize := int(binary.LittleEndian.Uint32(info))
	if hsize < 32 || len(info) < 4+hsize+4+16+16+4+32 {
		return nil, short
	}
	hdr := info[4 : 4+hsize]
	algID, keyBits := binary.LittleEndian.Uint32(hdr[8:]), int(binary.LittleEndian.Uint32(hdr[16:]))
	// 0x660E, 0x660F, 0x6610: AES-128, -192, -256 (RC4, 0x6801, is
	// not used for OOXML packages).
	if algID != 0x660E && algID != 0x660F && algID != 0x6610 || keyBits != 128 && keyBits != 192 && keyBits != 256 {
		return nil, fmt.Errorf("%w: encrypted with algorithm %#x (%d bits), which this reader does not decrypt; save an unprotected copy and submit that", ErrEncrypted, algID, keyBits)
	}
	v := info[4+hsize:]
	if binary.LittleEndian.Uint32(v) != 16 {
		return nil, fmt.Errorf("%w: a verifier salt of %d bytes", ErrCorrupt, binary.LittleEndian.Uint32(v))
	}
	salt, encVerifier, encHash := v[4:20], v[20:36], v[40:72]
	hfinal := sha1.New()
	hfinal.Write(spunHash(sha1.New, salt, passwordUTF16(password), 50000))
	hfinal.Write([]byte{0, 0, 0, 0})
	sum := hfinal.Sum(nil)
	derive := func(fill byte) []byte {
		buf := bytes.Repeat([]byte{fill}, 64)
		for i, c := range sum {
			buf[i] ^= c
		}
		s := sha1.Sum(buf)
		return s[:]
	}
	key := append(derive(0x36), derive(0x5c)...)[:keyBits/8]
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	ecb := func(b []byte) []byte {
		out := make([]byte, len(b)/aes.BlockSize*aes.BlockSize)
		for i := 0; i < len(out); i += aes.BlockSize {
			block.Decrypt(out[i:], b[i:i+aes.BlockSize])
		}
		return out
	}
	verifier := sha1.Sum(ecb(encVerifier))
	if subtle.ConstantTimeCompare(verifier[:], ecb(encHash)[:sha1.Size]) != 1 {
		return nil, errWrongPassword
	}
	return ecb(data), nil
}
