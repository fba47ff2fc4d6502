package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// A webhook registered with a run (`submit --webhook URL` without --wait)
// is delivered later by another process, a worker, which signs with its
// own EXTRACTQ_WEBHOOK_SECRET: the secret is never stored. The URL, which
// may carry a token, is stored sealed with a key derived from that secret
// (AES-256-GCM), so the database alone reveals neither; KeyID names the
// secret so that a worker holding another one says so.

// ErrWrongSecret: a sealed URL was sealed with another secret.
var ErrWrongSecret = errors.New("webhook: the URL was registered with another EXTRACTQ_WEBHOOK_SECRET than this process holds: give the workers the submitters' secret")

// derive is a key for purpose, derived from secret.
func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("extractq webhook " + purpose))
	return m.Sum(nil)
}

// KeyID names secret without revealing it: 16 hex digits of an HMAC.
func KeyID(secret []byte) string {
	return hex.EncodeToString(derive(secret, "key id")[:8])
}

// SealURL encrypts u with a key derived from secret: a random nonce
// followed by the AES-256-GCM ciphertext.
func SealURL(secret []byte, u string) ([]byte, error) {
	aead, err := urlCipher(secret)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := crand.Read(nonce); err != nil {
		return nil, fmt.Errorf("webhook: seal the URL: %w", err)
	}
	return aead.Seal(nonce, nonce, []byte(u), nil), nil
}

// OpenURL decrypts a URL sealed by SealURL, or returns ErrWrongSecret.
func OpenURL(secret, sealed []byte) (string, error) {
	aead, err := urlCipher(secret)
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", ErrWrongSecret
	}
	u, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	if err != nil {
		return "", ErrWrongSecret
	}
	return string(u), nil
}

func urlCipher(secret []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(derive(secret, "url"))
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return cipher.NewGCM(block)
}

// DoneDeliveryID is the delivery id of a run's done event of generation
// gen: derived, not drawn, so that whoever delivers it (a waiting submit,
// a worker, a worker restarted after a crash) sends it under one id.
func DoneDeliveryID(run string, gen int) string {
	return deliveryID("done", run, strconv.Itoa(gen))
}

// DeadLetterDeliveryID is the delivery id of the dead-letter event of a
// run's job, derived like DoneDeliveryID.
func DeadLetterDeliveryID(run, jobID string) string {
	return deliveryID("dead_letter", run, jobID)
}

func deliveryID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
