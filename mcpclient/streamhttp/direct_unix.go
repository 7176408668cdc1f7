//go:build unix

package streamhttp

import (
	"errors"
	"net"
	"syscall"
)

// connAlive reports whether an idle connection is still open and has
// nothing unread: a non-blocking peek, one system call, that finds the
// server's close (or stray bytes) before a request is written to it.
func connAlive(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true
	})
	return err == nil && alive
}
