// Package facts is preflight's first phase: it gathers what the checks
// judge (Facts) from the running host, from a recording (--record,
// --root DIR) or from a recorded host's YAML, and describes the load the
// host is judged for (Target). It imports neither checks nor remedies;
// what it needs from them (the capacity by which Gather picks among
// several listener owners) is passed down in GatherOptions.
package facts
