//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package http1

import (
	"net"
	"syscall"
)

// initPeek prepares c.alive: a non-blocking MSG_PEEK on the socket, set
// up once per connection so that a check allocates nothing.
func (c *conn) initPeek() {
	tc, ok := c.nc.(*net.TCPConn)
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
