package main

// End-to-end tests of the built binary run in testenv.Sandbox: a mount
// and network namespace (unshare --mount --net) with tmpfs over every
// place tune writes, so net.* sysctls land in a throwaway network
// namespace and files in throwaway tmpfs. fs.* sysctls stay global: the
// caller must check them.
//
// The real mosquitto and IoTDB listen on the host's loopback, which a new
// network namespace cannot reach (it has a loopback of its own), so the
// sandbox relays them (Sandbox.Relay): the probes load the real servers
// through the namespace's own TCP stack — the stack the tuning changed —
// plus a loopback hop in the host's stack.

import (
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

type sandboxStep struct {
	Argv []string
	Env  []string // added to the environment
}

type sandboxOut struct {
	Argv   []string
	Exit   int
	Stdout string
	Stderr string
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
	// ready applies profiles and preflight judges fs.nr_open and
	// fs.file-max, which the sandbox does not isolate: take turns with
	// the tune end-to-end tests of other packages.
	testenv.LockGlobalSysctls(t)
	sb := testenv.NewSandbox(t, extraMounts...)
	for _, tg := range targets {
		sb.Relay(tg)
	}
	var outs []sandboxOut
	for _, s := range steps {
		o, e, code := sb.RunEnv(s.Env, s.Argv...)
		outs = append(outs, sandboxOut{Argv: s.Argv, Exit: code, Stdout: o, Stderr: e})
	}
	return outs
}
