package ready

// A sandbox for end-to-end tests of the installed binary: a process in
// its own mount and network namespace (unshare --mount --net) with tmpfs
// over every place tune writes (/etc/sysctl.d, /etc/security/limits.d,
// /etc/systemd, /var/lib/hostprep, and /run for the lock), so net.*
// sysctls land in a throwaway network namespace and files in throwaway
// tmpfs. fs.* sysctls stay global: the caller must check them.
//
// The real mosquitto and IoTDB listen on the host's loopback, which a new
// network namespace cannot reach (it has a loopback of its own). So the
// sandbox relays: inside the namespace a listener on the same
// 127.0.0.1:PORT forwards each connection over a Unix socket (Unix sockets
// bound to a path are reachable across network namespaces) to the test
// process, which connects to the real server. The probes thus load the
// real servers through the namespace's own TCP stack — the stack the
// tuning changed — plus a loopback hop in the host's stack.
//
// This should move to internal/testenv if the tune tests want it too.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

const sandboxEnv = "HOSTPREP_READY_SANDBOX"

type sandboxRelay struct {
	Listen string `json:"listen"` // 127.0.0.1:PORT inside the namespace
	Unix   string `json:"unix"`   // socket the test process serves
}

type sandboxStep struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"` // added to the environment
}

type sandboxOut struct {
	Argv   []string `json:"argv"`
	Exit   int      `json:"exit"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
}

type sandboxSpec struct {
	Mounts []string       `json:"mounts"`
	Relays []sandboxRelay `json:"relays"`
	Steps  []sandboxStep  `json:"steps"`
	Out    string         `json:"out"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(sandboxEnv); spec != "" {
		if err := sandboxMain(spec); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox:", err)
			os.Exit(99)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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

// relay accepts on l and connects each connection to dial().
func relay(l net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			d, err := dial()
			if err != nil {
				c.Close()
				return
			}
			pipe(c, d)
		}()
	}
}

// sandboxMain runs inside `unshare --mount --net`.
func sandboxMain(specPath string) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec sandboxSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return err
	}
	// unshare(1) already made mount propagation private: these mounts
	// are not seen outside.
	for _, m := range spec.Mounts {
		if err := syscall.Mount("tmpfs", m, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %v", m, err)
		}
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %v %s", err, out)
	}
	for _, r := range spec.Relays {
		l, err := net.Listen("tcp", r.Listen)
		if err != nil {
			return fmt.Errorf("relay listen %s: %v", r.Listen, err)
		}
		sock := r.Unix
		go relay(l, func() (net.Conn, error) { return net.Dial("unix", sock) })
	}
	var outs []sandboxOut
	for _, s := range spec.Steps {
		cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
		cmd.Env = append(os.Environ(), s.Env...)
		var so, se safeBuf
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			return fmt.Errorf("%v: %v", s.Argv, err)
		}
		outs = append(outs, sandboxOut{Argv: s.Argv, Exit: code, Stdout: so.String(), Stderr: se.String()})
	}
	b, err = json.Marshal(outs)
	if err != nil {
		return err
	}
	return os.WriteFile(spec.Out, b, 0o644)
}

type safeBuf struct {
	mu sync.Mutex
	b  []byte
}

func (s *safeBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *safeBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// sandboxMounts are the directories tune writes under, each covered by a
// tmpfs (or its parent's, when it does not exist here, so nothing is
// created on the host), and /run for the lock.
func sandboxMounts(t *testing.T) []string {
	var out []string
	for _, p := range []string{"/etc/sysctl.d", "/etc/security/limits.d", "/etc/systemd", "/var/lib/hostprep", "/run"} {
		for q := p; ; q = filepath.Dir(q) {
			if q == "/" || q == "/etc" || q == "/var" {
				t.Fatalf("no directory to cover %s with a tmpfs", p)
			}
			if st, err := os.Stat(q); err == nil && st.IsDir() {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// runSandbox runs steps (argv lists) one after the other in one sandbox
// and returns what each printed and its exit code. targets are the
// host-loopback ip:port servers the sandbox may reach (relayed).
func runSandbox(t *testing.T, targets []string, steps [][]string) []sandboxOut {
	t.Helper()
	var ss []sandboxStep
	for _, s := range steps {
		ss = append(ss, sandboxStep{Argv: s})
	}
	return runSandboxSteps(t, targets, nil, ss)
}

// runSandboxSteps is runSandbox with per-step environment and extra
// tmpfs mounts (existing directories).
func runSandboxSteps(t *testing.T, targets, extraMounts []string, steps []sandboxStep) []sandboxOut {
	t.Helper()
	dir := t.TempDir()
	spec := sandboxSpec{Mounts: append(sandboxMounts(t), extraMounts...), Out: filepath.Join(dir, "out.json"), Steps: steps}
	for i, tg := range targets {
		sock := filepath.Join(dir, fmt.Sprintf("relay%d.sock", i))
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		target := tg
		go relay(l, func() (net.Conn, error) { return net.Dial("tcp", target) })
		spec.Relays = append(spec.Relays, sandboxRelay{Listen: tg, Unix: sock})
	}
	b, _ := json.Marshal(spec)
	specPath := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", self)
	cmd.Env = append(os.Environ(), sandboxEnv+"="+specPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sandbox: %v\n%s", err, out)
	}
	b, err = os.ReadFile(spec.Out)
	if err != nil {
		t.Fatal(err)
	}
	var outs []sandboxOut
	if err := json.Unmarshal(b, &outs); err != nil {
		t.Fatal(err)
	}
	return outs
}
