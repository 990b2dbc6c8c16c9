// Package rawsys issues the non-blocking socket and epoll calls of the
// probes' hot paths as raw system calls.
//
// The calls but EpollWait never block (the sockets are non-blocking and
// EpollPoll has a zero timeout), so the runtime need not be told. A plain Syscall marks
// the P as in a system call; when a write takes longer than sysmon's
// 20 µs tick (on loopback a write delivers the segment and wakes the
// server, and the writer may be preempted inside it) and a goroutine is
// waiting to run, sysmon hands the P to another thread, and the writer
// sleeps to get it back: thread wake-ups and context switches that
// measured as a large part of the MQTT probe's CPU per message, and
// about a sixth of the IoTDB event loop's samples (perf, 8 writers).
package rawsys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read is read(2) of b on the non-blocking descriptor fd: the bytes read
// (0 at end of stream), or the errno (unix.EAGAIN: nothing to read yet).
func Read(fd int, b []byte) (int, error) { return rawIO(unix.SYS_READ, fd, b) }

// Write is write(2) of b on the non-blocking descriptor fd: the bytes
// written (maybe fewer than len(b)), or the errno (unix.EAGAIN: the send
// buffer is full).
func Write(fd int, b []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, b) }

// rawIO is read(2) or write(2) (trap) of b on fd; an empty b is not
// passed to the kernel.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// EpollPoll is epoll_wait with a zero timeout (epoll_pwait with no
// signal mask, as x/sys/unix does where epoll_wait does not exist).
func EpollPoll(epfd int, evs []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// RecvTimestamped is recvmsg(2) of b on fd with SO_TIMESTAMPNS on:
// n bytes and ts, the kernel's receive time (CLOCK_REALTIME, ns since
// the epoch) of the last segment the read took data from, 0 when the
// message carried none. oob is the control buffer
// (unix.CmsgSpace(16) bytes).
func RecvTimestamped(fd int, b, oob []byte) (n int, ts int64, err error) {
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, 0, e
	}
	n = int(r)
	if msg.Controllen >= uint64(unix.CmsgLen(16)) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS {
			t := (*unix.Timespec)(unsafe.Pointer(&oob[unix.CmsgLen(0)]))
			ts = t.Nano()
		}
	}
	return n, ts, nil
}

// EpollWait is epoll_wait for up to ms milliseconds (-1: no limit) as a
// raw call: the events ready (up to len(evs)), or the errno (EINTR when
// a signal came first). Unlike the other calls here it blocks, and the
// runtime is not told: the calling goroutine keeps its P for the whole
// wait, so no other goroutine runs on that P and a garbage collection's
// stop-the-world waits for the call to return. Callers bound ms (a few
// ms) and use it only when GOMAXPROCS > 1. What it saves over a plain
// blocking system call is the P's hand-off and sysmon's wake-ups around
// every wait: measured on the IoTDB event loop at 1 writer as 46-56 µs of
// CPU per operation against 70-78 µs.
func EpollWait(epfd int, evs []unix.EpollEvent, ms int) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
