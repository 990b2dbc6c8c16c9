package checks

import (
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// iotdb.ignored: lines of iotdb-system.properties that the release does
// not read (its own template does not list the property), so an edit
// there changes nothing: IoTDB 2.x reads dn_thrift_max_frame_size, not
// the 1.x thrift_max_frame_size.

func init() {
	register(CheckDef{ID: "iotdb.ignored", Doc: "every property set in iotdb-system.properties is one the release reads (its template lists it)", Roles: iotdbOnly, Func: CheckIoTDBIgnored})
}

func CheckIoTDBIgnored(f *facts.Facts, t facts.Target) verdict.Check {
	c := f.IoTDB
	if c == nil {
		return skip("no IoTDB release read: hostprep preflight --iotdb-home DIR")
	}
	if c.Version == "" {
		return skip("the release's property list (lib/node-commons-*.jar!/iotdb-system.properties.template) was not found: which lines it ignores is not known")
	}
	exp := fmt.Sprintf("only properties IoTDB %s reads (its iotdb-system.properties.template)", c.Version)
	if len(c.Ignored) == 0 {
		return pass(fmt.Sprintf("every property set is one IoTDB %s reads", c.Version), "no unknown property", exp)
	}
	var obs, fixes []string
	for _, ig := range c.Ignored {
		obs = append(obs, ignoredLine(ig, c.Version))
		if ig.Use != "" {
			fixes = append(fixes, fmt.Sprintf("replace %s=%s by %s=%s at %s", ig.Name, ig.Value, ig.Use, ig.Value, ig.At))
		} else {
			fixes = append(fixes, fmt.Sprintf("remove or correct %s at %s", ig.Name, ig.At))
		}
	}
	return warn(fmt.Sprintf("%s in iotdb-system.properties IoTDB %s does not read, so setting them changes nothing: %s",
		plural.N(len(c.Ignored), "line"), c.Version, strings.Join(obs, "; ")),
		strings.Join(obs, "; "), exp, strings.Join(fixes, "; ")+", then restart the DataNode")
}

// ignoredLine says that a line is not read, and what is read instead.
func ignoredLine(ig facts.IgnoredProperty, version string) string {
	s := fmt.Sprintf("%s=%s (%s) is not read by IoTDB %s", ig.Name, ig.Value, ig.At, version)
	if ig.Use != "" {
		s += fmt.Sprintf(" (it reads %s)", ig.Use)
	}
	return s
}

// ignoredFor returns the ignored lines that stand for prop (Use), said
// and by name.
func ignoredFor(c *facts.IoTDBConfig, prop string) (said, names []string) {
	if c == nil {
		return nil, nil
	}
	for _, ig := range c.Ignored {
		if ig.Use == prop {
			said = append(said, ignoredLine(ig, c.Version))
			names = append(names, ig.Name+" at "+ig.At)
		}
	}
	return said, names
}
