// Package codecheck holds the repository's checks on its own code, run
// by the test command: rules a reviewer would otherwise have to remember.
// It has no code of its own; see its tests.
package codecheck
