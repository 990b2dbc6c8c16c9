// Package sysctl reads and writes kernel parameters under a /proc/sys root,
// so tests can point it at a fixture tree laid out like /proc/sys. A key's
// file is found as procps and systemd find it (internal/sysctlkey).
//
// github.com/lorenzosaino/go-sysctl did this before; its key-to-path rule
// takes every dot for a separator, so it cannot reach the key of an
// interface whose name has a dot (net.ipv4.conf.eth0/100.rp_filter, file
// net/ipv4/conf/eth0.100/rp_filter), and what it added was a read and a
// write of one file.
package sysctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hostprep/hostprep/internal/sysctlkey"
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
	// Readable reports whether the key's file has a read bit (the
	// kernel shows a write-only trigger, such as net.ipv4.route.flush,
	// as mode 0200).
	Readable(key string) bool
	// Secret reports whether the kernel keeps the key's value from all
	// but its owner, root: a file it shows readable by its owner and
	// by no group or other (mode 0600), as net.ipv4.tcp_fastopen_key
	// and net.ipv6.conf.*.stable_secret.
	Secret(key string) bool
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
}

// New returns a Backend over root ("" means /proc/sys). It fails when root
// is not a directory.
func New(root string) (*Proc, error) {
	if root == "" {
		root = DefaultRoot
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, fmt.Errorf("sysctl root %s: %w", root, err)
	}
	return &Proc{root: root}, nil
}

// Path is the file holding key under the root (sysctlkey.File).
func (p *Proc) Path(key string) string { return sysctlkey.File(p.root, key) }

// Root is the directory standing for /proc/sys.
func (p *Proc) Root() string { return p.root }

// Get returns key's value, trimmed.
func (p *Proc) Get(key string) (string, error) {
	b, err := os.ReadFile(p.Path(key))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Exists reports whether key is a regular file under the root.
func (p *Proc) Exists(key string) bool {
	st, err := os.Stat(p.Path(key))
	return err == nil && st.Mode().IsRegular()
}

// Readable reports whether key's file has any read permission bit.
func (p *Proc) Readable(key string) bool {
	st, err := os.Stat(p.Path(key))
	return err == nil && st.Mode().Perm()&0o444 != 0
}

// Secret reports whether key's file is readable by its owner only.
func (p *Proc) Secret(key string) bool {
	st, err := os.Stat(p.Path(key))
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o400 != 0 && st.Mode().Perm()&0o044 == 0
}

// Writable reports whether key's file has any write permission bit.
func (p *Proc) Writable(key string) bool {
	st, err := os.Stat(p.Path(key))
	return err == nil && st.Mode().Perm()&0o222 != 0
}

// Set writes value to key in one write(2), as the kernel wants it. It
// refuses to create a key that does not exist (a fixture tree would take
// the new file).
func (p *Proc) Set(key, value string) error {
	if !p.Exists(key) {
		return &os.PathError{Op: "write", Path: p.Path(key), Err: fs.ErrNotExist}
	}
	if value == "" {
		// A zero-byte write does not reach the kernel; a newline clears
		// list keys such as net.ipv4.ip_local_reserved_ports.
		value = "\n"
	}
	f, err := os.OpenFile(p.Path(key), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(value)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// IsNotExist reports whether err means the key is unknown to this kernel.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
