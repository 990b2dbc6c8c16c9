package boot

import "fmt"

// Assignment is one KEY= line of a unit file: its value (trimmed, "" for
// an empty assignment) and where it is ("FILE:LINE", FILE as
// ConfFile.Name gives it).
type Assignment struct {
	Value, Where string
}

// Assignments lists every KEY= line inside [section] of files (a unit's,
// as UnitNofile lists them), in the order systemd 252 reads them, for a
// setting whose empty value does not reset it (Slice=: LastAccepted
// takes an empty value for a reset). Errors: a file that exists but
// cannot be read.
func Assignments(root string, files []ConfFile, section, key string) ([]Assignment, error) {
	var out []Assignment
	err := eachAssignment(tree{root: root}, files, section, key, func(v string, f ConfFile, line int) {
		out = append(out, Assignment{Value: v, Where: fmt.Sprintf("%s:%d", f.Name(), line)})
	})
	return out, err
}
