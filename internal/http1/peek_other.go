//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package http1

// initPeek does nothing here: no portable non-blocking peek.
func (c *conn) initPeek() {}

// alive cannot tell here; a closed connection shows on use (see RoundTrip).
func (c *conn) alive() bool { return true }
