package counts

import "testing"

// TestSum guards the pairwise sum: each total gets its own part, whatever
// the counter's type.
func TestSum(t *testing.T) {
	var total, part struct {
		ok, errs int64
		clients  int
	}
	part.ok, part.errs, part.clients = 3, 1, 2
	for range 2 {
		Sum([2]*int64{&total.ok, &part.ok}, [2]*int64{&total.errs, &part.errs})
		Sum([2]*int{&total.clients, &part.clients})
	}
	if total.ok != 6 || total.errs != 2 || total.clients != 4 {
		t.Errorf("totals %+v", total)
	}
}

// TestAdd guards counts by name: summed per name, a nil total made only
// when there is something to add (an empty map is omitted in JSON).
func TestAdd(t *testing.T) {
	if got := Add(nil, nil); got != nil {
		t.Errorf("Add(nil, nil) = %v, want nil", got)
	}
	if got := Add(nil, map[string]int64{}); got != nil {
		t.Errorf("Add(nil, empty) = %v, want nil", got)
	}
	got := Add(nil, map[string]int64{"reset": 2})
	got = Add(got, map[string]int64{"reset": 3, "closed_by_broker": 1})
	if len(got) != 2 || got["reset"] != 5 || got["closed_by_broker"] != 1 {
		t.Errorf("Add = %v", got)
	}
}

// TestList guards the printed summary: name order (never Go's random map
// order), the caller's format, "" for none.
func TestList(t *testing.T) {
	m := map[string]int64{"reset": 61, "closed_by_broker": 48, "803": 2}
	if got := List(m, "%s %d"); got != "803 2, closed_by_broker 48, reset 61" {
		t.Errorf("List = %q", got)
	}
	if got := List(map[string]int64{"906": 1, "500": 3}, "%s x%d"); got != "500 x3, 906 x1" {
		t.Errorf("List x = %q", got)
	}
	if got := List(nil, "%s %d"); got != "" {
		t.Errorf("List(nil) = %q", got)
	}
	if got := Each(m, func(k string, n int64) string { return k }); got != "803, closed_by_broker, reset" {
		t.Errorf("Each = %q", got)
	}
}
