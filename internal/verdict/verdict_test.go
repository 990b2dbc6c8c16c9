package verdict

import "testing"

func TestWorst(t *testing.T) {
	cases := []struct {
		in   []Status
		want Status
	}{
		{nil, Pass},
		{[]Status{Skip}, Pass},
		{[]Status{Pass, Skip}, Pass},
		{[]Status{Pass, Warn, Skip}, Warn},
		{[]Status{Warn, Fail, Pass}, Fail},
	}
	for _, c := range cases {
		var cs []Check
		for _, s := range c.in {
			cs = append(cs, Check{ID: "x", Status: s})
		}
		if got := Worst(cs); got != c.want {
			t.Errorf("Worst(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}
