package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, OK},
		{errors.New("plain"), Failed},
		{BadInputf("profile %q: bad", "x"), BadInput},
		{fmt.Errorf("wrapped: %w", Environmentf("lock held")), Environment},
		{Failedf("drift"), Failed},
		{New(BadInput, nil), OK},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
