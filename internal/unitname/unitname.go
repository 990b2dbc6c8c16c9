// Package unitname completes a systemd unit name as systemctl does.
package unitname

import "strings"

// types are systemd 252's unit types (unit_type_from_string).
var types = map[string]bool{"service": true, "socket": true, "target": true, "device": true, "mount": true, "automount": true,
	"swap": true, "timer": true, "path": true, "slice": true, "scope": true}

// IsType says whether t ("service", no dot) is a systemd unit type.
func IsType(t string) bool { return types[t] }

// Service is name as systemctl names the unit (systemd 252's
// unit_name_mangle_with_suffix with ".service"): unchanged when the part
// after its last dot is a unit type ("mosquitto.service", "foo.socket"),
// else with ".service" appended — also for a name with a dot in it
// ("php8.2-fpm" is php8.2-fpm.service, as `systemctl status php8.2-fpm`
// finds it). Names are taken as valid (no escaping).
func Service(name string) string {
	if dot := strings.LastIndex(name, "."); dot >= 0 && IsType(name[dot+1:]) {
		return name
	}
	return name + ".service"
}
