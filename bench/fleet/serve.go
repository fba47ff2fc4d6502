package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/extractq/extractq/internal/sim"
)

// simServer is (*sim.Server).Serve, the simulator's own HTTP/1.1 server
// with net/http behind it. -same-harness builds this bench against an
// older internal/sim, which has no Serve: serveSim then serves Handler
// through net/http, as that revision's bench did, so each side of a
// comparison runs its own simulator's server.
type simServer interface {
	Serve(ctx context.Context, ln net.Listener) error
}

// serveSim serves s on ln until ctx is done.
func serveSim(ctx context.Context, s *sim.Server, ln net.Listener) error {
	if fs, ok := any(s).(simServer); ok {
		return fs.Serve(ctx, ln)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// simOnLoopback serves s on a loopback port, over TLS with cf's
// certificate when cf is set; stop shuts it down and waits.
func simOnLoopback(s *sim.Server, cf *certFiles) (url string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for the simulator: %w", err)
	}
	scheme := "http://"
	if cf != nil {
		cert, err := tls.LoadX509KeyPair(cf.cert, cf.key)
		if err != nil {
			_ = ln.Close()
			return "", nil, fmt.Errorf("the simulator's TLS certificate: %w", err)
		}
		// HTTP/1.1 alone: the simulator's server speaks nothing else.
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
		scheme = "https://"
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveSim(ctx, s, ln) }()
	return scheme + ln.Addr().String(), func() error {
		s.Close() // release requests held by latency or timeouts first
		cancel()
		return <-served
	}, nil
}

// certFiles are the PEM files of the simulator's certificate (which the
// workers trust through SSL_CERT_FILE) and of its key.
type certFiles struct{ cert, key string }

// selfSignedCert writes a certificate for 127.0.0.1, valid for a day, and
// its key into dir.
func selfSignedCert(dir string) (*certFiles, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          bigOne,
		Subject:               pkix.Name{CommonName: "extractq bench simulator"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // trusted as its own root by SSL_CERT_FILE
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	cf := &certFiles{cert: filepath.Join(dir, "sim-cert.pem"), key: filepath.Join(dir, "sim-key.pem")}
	if err := os.WriteFile(cf.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cf.key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, err
	}
	return cf, nil
}

var bigOne = big.NewInt(1)

// client is an HTTP client that trusts the certificate alone, for the
// bench's own requests to the simulator (its /stats).
func (cf *certFiles) client() (*http.Client, error) {
	pemBytes, err := os.ReadFile(cf.cert)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("no certificate in %s", cf.cert)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}, nil
}
