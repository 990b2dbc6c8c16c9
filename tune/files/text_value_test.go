package files

import (
	"strings"
	"testing"
)

// TestTextValueKeepsInnerWhiteSpace: the sysctl.d file carries a text
// value as the kernel is to keep it, inner blanks and tabs included
// (systemd-sysctl trims only the ends), still on one line.
func TestTextValueKeepsInnerWhiteSpace(t *testing.T) {
	got := string(RenderSysctl([]string{"p"}, []SysctlLine{
		{Key: "kernel.core_pattern", Value: " /tmp/core  x\t%e "},
		{Key: "kernel.modprobe", Value: "/sbin/modprobe\n-x"},
	}))
	for _, want := range []string{"\nkernel.core_pattern = /tmp/core  x\t%e\n", "\nkernel.modprobe = /sbin/modprobe -x\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered file lacks %q:\n%s", want, got)
		}
	}
}
