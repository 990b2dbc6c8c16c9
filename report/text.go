package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText writes the fleet table: one line per host, not-ready hosts
// first, then a count per verdict and any notes.
func (f *Fleet) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range f.Rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var counts []string
	for v, n := range f.ByVerdict {
		counts = append(counts, fmt.Sprintf("%d %s", n, v))
	}
	sort.Strings(counts)
	fmt.Fprintf(w, "\n%d hosts: %s\n", f.Hosts, strings.Join(counts, ", "))
	for _, n := range f.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	return nil
}

// WriteJSON writes the fleet as indented JSON (see Fleet and Row).
func (f *Fleet) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
