// Package sysctl reads and writes kernel parameters under a /proc/sys root
// through github.com/lorenzosaino/go-sysctl, so tests can point it at a
// fixture tree laid out like /proc/sys.
package sysctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gosysctl "github.com/lorenzosaino/go-sysctl"
)

// DefaultRoot is the live kernel's sysctl tree.
const DefaultRoot = "/proc/sys"

// Backend reads and writes sysctl values by key (net.core.somaxconn).
// Values are as the kernel prints them, trimmed of surrounding white space.
type Backend interface {
	// Get returns the value of key; an unknown key gives an error wrapping
	// fs.ErrNotExist.
	Get(key string) (string, error)
	// Set writes value to key. The kernel's refusal comes back as the
	// *os.PathError with its errno (EINVAL, EROFS, EPERM).
	Set(key, value string) error
	// Exists reports whether this kernel has key.
	Exists(key string) bool
	// Writable reports whether the key's file has a write bit (the kernel
	// shows a read-only key, such as a global net.core key seen from a
	// network namespace, as mode 0444).
	Writable(key string) bool
	// Root is the directory standing for /proc/sys.
	Root() string
}

// Proc is the Backend over a directory laid out like /proc/sys.
type Proc struct {
	root string
	c    *gosysctl.Client
}

// New returns a Backend over root ("" means /proc/sys). It fails when root
// is not a directory.
func New(root string) (*Proc, error) {
	if root == "" {
		root = DefaultRoot
	}
	c, err := gosysctl.NewClient(root)
	if err != nil {
		return nil, fmt.Errorf("sysctl root %s: %w", root, err)
	}
	return &Proc{root: root, c: c}, nil
}

// Path is the file holding key under the root.
func (p *Proc) Path(key string) string {
	return filepath.Join(p.root, strings.ReplaceAll(key, ".", "/"))
}

// Root is the directory standing for /proc/sys.
func (p *Proc) Root() string { return p.root }

// Get returns key's value, trimmed.
func (p *Proc) Get(key string) (string, error) {
	return p.c.Get(key)
}

// Exists reports whether key is a regular file under the root.
func (p *Proc) Exists(key string) bool {
	st, err := os.Stat(p.Path(key))
	return err == nil && st.Mode().IsRegular()
}

// Writable reports whether key's file has any write permission bit.
func (p *Proc) Writable(key string) bool {
	st, err := os.Stat(p.Path(key))
	return err == nil && st.Mode().Perm()&0o222 != 0
}

// Set writes value to key. It refuses to create a key that does not exist
// (go-sysctl would create the file in a fixture tree).
func (p *Proc) Set(key, value string) error {
	if !p.Exists(key) {
		return &os.PathError{Op: "write", Path: p.Path(key), Err: fs.ErrNotExist}
	}
	if value == "" {
		// A zero-byte write does not reach the kernel; a newline clears
		// list keys such as net.ipv4.ip_local_reserved_ports.
		value = "\n"
	}
	return p.c.Set(key, value)
}

// IsNotExist reports whether err means the key is unknown to this kernel.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
