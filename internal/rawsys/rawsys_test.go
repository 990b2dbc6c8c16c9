package rawsys

import (
	"testing"

	"golang.org/x/sys/unix"
)

// On a non-blocking socket pair: Write delivers, EpollPoll and EpollWait
// report the peer readable (and nothing before), Read returns the bytes, a second Read says EAGAIN (not
// an error the caller must treat as fatal), and a closed peer reads as 0.
func TestReadWriteEpollOnASocketPair(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fds[0], fds[1]
	defer unix.Close(a)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, a, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(a)}); err != nil {
		t.Fatal(err)
	}
	evs := make([]unix.EpollEvent, 4)
	if n, err := EpollPoll(ep, evs); n != 0 || err != nil {
		t.Fatalf("EpollPoll on an idle socket: %d events, %v; want 0", n, err)
	}
	wait := func(ms int) (int, error) { // as a caller does: a signal's EINTR is retried
		for {
			if n, err := EpollWait(ep, evs, ms); err != unix.EINTR {
				return n, err
			}
		}
	}
	if n, err := wait(20); n != 0 || err != nil {
		t.Fatalf("EpollWait on an idle socket: %d events, %v; want 0 at its timeout", n, err)
	}
	if n, err := Write(b, []byte("ping")); n != 4 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if n, err := EpollPoll(ep, evs); n != 1 || err != nil || int(evs[0].Fd) != a {
		t.Fatalf("EpollPoll after a write: %d events (%+v), %v; want a readable", n, evs[:max(n, 0)], err)
	}
	if n, err := wait(1000); n != 1 || err != nil || int(evs[0].Fd) != a {
		t.Fatalf("EpollWait after a write: %d events, %v; want a readable", n, err)
	}
	buf := make([]byte, 16)
	if n, err := Read(a, buf); n != 4 || err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("Read: %q, %v", buf[:max(n, 0)], err)
	}
	if _, err := Read(a, buf); err != unix.EAGAIN {
		t.Fatalf("Read with nothing left: %v, want EAGAIN", err)
	}
	if n, err := Write(b, nil); n != 0 || err != nil {
		t.Fatalf("Write of nothing: %d, %v", n, err)
	}
	unix.Close(b)
	if n, err := Read(a, buf); n != 0 || err != nil {
		t.Fatalf("Read after the peer closed: %d, %v; want 0 (end of stream)", n, err)
	}
}
