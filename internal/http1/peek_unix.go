//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package http1

import (
	"crypto/tls"
	"net"
	"syscall"
)

// initPeek prepares c.alive: a non-blocking MSG_PEEK on the socket, set
// up once per connection so that a check allocates nothing.
//
// Over TLS the peek looks at the TCP socket under the TLS layer: on an
// idle connection any byte there is a record nobody asked for (a
// close_notify alert, most likely), so the connection is not reused, as
// on a plain one.
func (c *conn) initPeek() {
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	c.rc = rc
	c.peekFn = func(fd uintptr) bool {
		c.peekN, _, c.peekErr = syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readiness
	}
}

// alive reports whether an idle connection can take a request: the
// server has not closed or reset it, and sent nothing unasked. It is what
// net/http's per-connection read loop learns by blocking in Read while
// the connection is idle, for one system call when the connection is
// taken from the pool.
func (c *conn) alive() bool {
	if c.rc == nil {
		return true
	}
	if err := c.rc.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekErr == syscall.EAGAIN || c.peekErr == syscall.EWOULDBLOCK
}
