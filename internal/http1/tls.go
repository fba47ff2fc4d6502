package http1

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"time"
)

// tlsConfig is TLSClientConfig prepared for every https dial: cloned,
// HTTP/1.1 alone offered by ALPN (a server that picked h2 would speak a
// protocol this transport does not), and a session cache so that a
// re-dial after a server closed an idle connection resumes the session
// instead of a full handshake.
func (t *Transport) tlsConfig() *tls.Config {
	var cfg *tls.Config
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	} else {
		cfg = &tls.Config{}
	}
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ClientSessionCache == nil {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	return cfg
}

// handshake runs the TLS handshake on a fresh connection to addr within
// the request's context and TLSHandshakeTimeout; on failure nc is closed.
func (t *Transport) handshake(ctx context.Context, nc net.Conn, addr string, base *tls.Config) (net.Conn, error) {
	cfg := base
	if cfg.ServerName == "" {
		cfg = base.Clone()
		cfg.ServerName = serverName(addr)
	}
	timeout := t.TLSHandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultTLSHandshakeTimeout
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if hctx.Err() != nil {
			err = &handshakeTimeout{after: timeout}
		}
		return nil, &Error{Op: "tls handshake", Addr: addr, Err: err}
	}
	return tc, nil
}

// serverName is the name a certificate must carry: the host of addr,
// without its port and IPv6 brackets (crypto/tls checks an IP address
// against the certificate's IP SANs).
func serverName(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	}
	return host
}

// handshakeTimeout is a handshake that ran past TLSHandshakeTimeout: a
// timeout by net.Error, so that callers retry it as one.
type handshakeTimeout struct{ after time.Duration }

func (e *handshakeTimeout) Error() string {
	return "TLS handshake timeout after " + e.after.String() + " (Transport.TLSHandshakeTimeout)"
}
func (e *handshakeTimeout) Timeout() bool   { return true }
func (e *handshakeTimeout) Temporary() bool { return true }
