// Command hostprep prepares a Linux host for very large loads and proves it:
// tune, preflight, probe, ready.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
