package plural

import "testing"

func TestN(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "time", "0 times"},
		{1, "time", "1 time"},
		{2, "time", "2 times"},
		{1, "step", "1 step"},
		{2, "step", "2 steps"},
		{2, "ms", "2 ms"},
		{1, "change", "1 change"},
		{3, "entry", "3 entries"},
		{2, "key", "2 keys"},
		{2, "process", "2 processes"},
		{2, "failed check", "2 failed checks"},
		{2, "box", "2 boxes"},
		{2, "match", "2 matches"},
		{1, "host", "1 host"},
		{5, "host", "5 hosts"},
		{2, "was", "2 were"},
	} {
		if got := N(tc.n, tc.noun); got != tc.want {
			t.Errorf("N(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		v    []int
		want string
	}{
		{[]int{1}, "1 worker"},
		{[]int{8}, "8 workers"},
		{[]int{1, 2}, "1, 2 workers"},
		{[]int{8, 16, 32}, "8, 16, 32 workers"},
		{nil, "workers"},
	} {
		if got := List(tc.v, "worker"); got != tc.want {
			t.Errorf("List(%v, worker) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestThemAgreesWithTheCount(t *testing.T) {
	for n, want := range map[int]string{0: "them", 1: "it", 2: "them"} {
		if got := Them(n); got != want {
			t.Errorf("Them(%d) = %q, want %q", n, got, want)
		}
	}
}
