package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// Sandbox is a throwaway mount and network namespace (unshare --mount
// --net) for end-to-end tests of the built binary, with a tmpfs over every
// directory hostprep writes on a host: /etc/sysctl.d, /etc/modules-load.d,
// /etc/security/limits.d, /etc/systemd, /var/lib (the journal's parent)
// and /run (the lock) — each, when it does not exist here, through its
// nearest existing parent, so nothing is created on the host. Its loopback
// is up. net.* sysctl writes land in the namespace and files in the
// tmpfs; fs.* sysctls stay global, so a test that may change them guards
// them with GuardSysctls.
//
// The namespace is held by a sleeping process; commands enter it with
// nsenter(1). It goes away when the test ends.
type Sandbox struct {
	T   testing.TB
	PID int    // the process holding the namespaces
	Bin string // the built hostprep (Binary)
}

// sandboxDirs are the directories hostprep writes under on a host. The
// journal's directory is covered through its parent, /var/lib: tests
// judge whether hostprep creates and removes /var/lib/hostprep, and an
// empty one on the host (or one an earlier run left) must not change
// that.
var sandboxDirs = []string{"/etc/sysctl.d", "/etc/modules-load.d", "/etc/security/limits.d", "/etc/systemd", "/var/lib", "/run"}

// NewSandbox makes a Sandbox, with a tmpfs also over each of extraMounts
// (existing directories). It skips (fails in CI) without root and unshare.
func NewSandbox(t testing.TB, extraMounts ...string) *Sandbox {
	t.Helper()
	RequireUnshare(t)
	bin := Binary(t)
	var mounts []string
	for _, p := range sandboxDirs {
		for q := p; ; q = filepath.Dir(q) {
			if q == "/" || q == "/etc" || q == "/var" {
				t.Fatalf("no directory to cover %s with a tmpfs", p)
			}
			if st, err := os.Stat(q); err == nil && st.IsDir() {
				mounts = append(mounts, q)
				break
			}
		}
	}
	mounts = append(mounts, extraMounts...)
	// unshare(1) makes mount propagation private: these mounts are not
	// seen outside.
	script := `set -e
for d in "$@"; do mount -t tmpfs -o mode=0755 hostprep-test "$d"; done
ip link set lo up
echo ready
exec sleep 3600`
	cmd := exec.Command("unshare", append([]string{"--mount", "--net", "--propagation", "private", "sh", "-c", script, "sh"}, mounts...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("sandbox setup: %q %v %s", line, err, stderr.String())
	}
	return &Sandbox{T: t, PID: cmd.Process.Pid, Bin: bin}
}

// Run runs argv inside the sandbox and returns stdout, stderr and the
// exit code.
func (s *Sandbox) Run(argv ...string) (stdout, stderr string, code int) {
	s.T.Helper()
	return s.RunEnv(nil, argv...)
}

// RunEnv is Run with env (KEY=VALUE) added to the test's environment.
func (s *Sandbox) RunEnv(env []string, argv ...string) (stdout, stderr string, code int) {
	s.T.Helper()
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(s.PID), "-m", "-n", "--"}, argv...)...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return Exec(s.T, cmd)
}

// Hostprep runs the built hostprep with args inside the sandbox.
func (s *Sandbox) Hostprep(args ...string) (stdout, stderr string, code int) {
	s.T.Helper()
	return s.Run(append([]string{s.Bin}, args...)...)
}

// Sysctl reads key (as the kernel spells it, net.core.somaxconn) in the
// sandbox; an unreadable key fails the test.
func (s *Sandbox) Sysctl(key string) string {
	s.T.Helper()
	out, errOut, code := s.Run("cat", sysctlkey.File("/proc/sys", key))
	if code != 0 {
		s.T.Fatalf("read %s: %s", key, errOut)
	}
	return strings.TrimSpace(out)
}

// ReadFile reads path as the sandbox sees it; false if it cannot be read.
func (s *Sandbox) ReadFile(path string) (string, bool) {
	s.T.Helper()
	out, _, code := s.Run("cat", path)
	return out, code == 0
}

// Relay makes target, a server on the host's loopback (127.0.0.1:PORT),
// reachable at the same address inside the sandbox, whose network
// namespace has a loopback of its own: a listener on target inside the
// namespace forwards each connection to target on the host. Connections
// thus go through the sandbox's TCP stack (the one a tuning changed) plus
// a loopback hop in the host's. The relay stops when the test ends.
func (s *Sandbox) Relay(target string) {
	s.T.Helper()
	l, err := s.listen(target)
	if err != nil {
		s.T.Fatalf("relay listen %s in the sandbox: %v", target, err)
	}
	s.T.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				d, err := net.Dial("tcp", target)
				if err != nil {
					c.Close()
					return
				}
				pipe(c, d)
			}()
		}
	}()
}

// listen opens a TCP listener in the sandbox's network namespace: from an
// OS thread moved there with setns(2), which is never unlocked so that it
// ends with its goroutine instead of returning to the pool.
func (s *Sandbox) listen(addr string) (net.Listener, error) {
	type res struct {
		l   net.Listener
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", s.PID))
		if err != nil {
			ch <- res{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{nil, fmt.Errorf("setns: %v", err)}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- res{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// pipe copies a to b and b to a until both are done, then closes both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			c.CloseWrite()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
