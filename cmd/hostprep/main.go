// Command hostprep prepares a Linux host for very large loads and proves it:
// tune, preflight, probe, ready.
package main

import (
	"fmt"
	"os"

	"github.com/hostprep/hostprep/internal/exitcode"
)

func main() {
	err := newRootCmd().Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostprep: "+err.Error())
	}
	os.Exit(exitcode.Code(err))
}
