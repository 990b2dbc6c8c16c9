package profiles

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/rate"
	"github.com/hostprep/hostprep/internal/sysctlval"
	"gopkg.in/yaml.v3"
)

// Mode says how a sysctl value in a profile is compared with the host.
type Mode string

const (
	// Exact sets the key to the value whatever the host has.
	Exact Mode = "exact"
	// AtLeast raises the key to the value, never lowers a host already
	// tuned higher. For multi-value keys (tcp_rmem) every field is compared.
	AtLeast Mode = "at-least"
	// AtMost lowers the key to the value, never raises it.
	AtMost Mode = "at-most"
)

// Sysctl is one kernel parameter in a profile.
//
// In YAML it is either a bare string (`net.core.somaxconn: "32768"`, mode
// exact) or a mapping with value, mode, optional and comment.
type Sysctl struct {
	// Value as the kernel prints it under /proc/sys; fields of multi-value
	// keys are separated by white space ("4096 131072 16777216").
	Value string `yaml:"value" json:"value"`
	// Mode is exact (default), at-least or at-most.
	Mode Mode `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Optional keys may be absent on this kernel or need a module
	// (net.netfilter.*); they are skipped with a reason instead of failing.
	Optional bool `yaml:"optional,omitempty" json:"optional,omitempty"`
	// IfRefused says what tune does where the running kernel refuses the
	// value (found by writing it in a scratch network namespace, or from
	// the table of bounds where no trial is possible): RefusedError (the
	// default, also when empty) stops the plan with exit 2 and names the
	// value the kernel takes; RefusedNearest uses that value instead and
	// notes it in the plan. The built-in sys-tune uses nearest where the
	// vendor script's number is refused by some kernels.
	IfRefused Refusal `yaml:"if_refused,omitempty" json:"if_refused,omitempty"`
	// Comment says where the number comes from or why it deviates.
	Comment string `yaml:"comment,omitempty" json:"comment,omitempty"`
	// Set is the --set argument that gave Value ("" for a profile's own
	// value): such a value has no entry to add if_refused to.
	Set string `yaml:"-" json:"-"`
	// Parsed is Value parsed, once, when the profile is loaded (Load,
	// Parse, --set) or, for a profile built in code, validated: its
	// whole-number fields, its port set. Users of a validated profile
	// read these instead of parsing Value again.
	Parsed sysctlval.Value `yaml:"-" json:"-"`
}

// Refusal is a sysctl entry's if_refused: what tune does with a value the
// running kernel refuses.
type Refusal string

const (
	// RefusedError stops the plan (exit 2) before anything is written.
	RefusedError Refusal = "error"
	// RefusedNearest writes the nearest value the kernel accepts.
	RefusedNearest Refusal = "nearest"
)

// Limit is a soft/hard pair of a resource limit, in the resource's unit
// (nofile: file descriptors).
type Limit struct {
	Soft uint64 `yaml:"soft" json:"soft"`
	Hard uint64 `yaml:"hard" json:"hard"`
	// Mode may only be at-least (the default, also when empty): tune never
	// writes a nofile limit below what new sessions and services get now.
	Mode Mode `yaml:"mode,omitempty" json:"mode,omitempty"`
}

// Limits are the PAM (pam_limits, /etc/security/limits.d) limits a login
// session gets. They do not reach systemd services.
type Limits struct {
	// Nofile is RLIMIT_NOFILE: open file descriptors per process.
	Nofile *Limit `yaml:"nofile,omitempty" json:"nofile,omitempty"`
	// Users the limits lines are written for; default ["*", "root"]
	// ("*" does not cover root in pam_limits).
	Users []string `yaml:"users,omitempty" json:"users,omitempty"`
}

// Systemd holds limits for services started by systemd, which ignore
// limits.conf.
type Systemd struct {
	// DefaultLimitNOFILE goes to /etc/systemd/system.conf.d (all units).
	DefaultLimitNOFILE *Limit `yaml:"default_limit_nofile,omitempty" json:"default_limit_nofile,omitempty"`
	// Services get a drop-in UNIT.service.d/60-hostprep.conf with
	// LimitNOFILE; names without ".service" are completed.
	Services []string `yaml:"services,omitempty" json:"services,omitempty"`
	// LimitNOFILE for Services; when nil, Limits.Nofile is used.
	LimitNOFILE *Limit `yaml:"limit_nofile,omitempty" json:"limit_nofile,omitempty"`
	// TasksMax for Services, in the same drop-in: the most tasks
	// (threads and processes) the unit's cgroup may hold (pids.max), or
	// TasksInfinity; nil writes none. Like a nofile limit it is at-least:
	// tune never writes one below what the unit gets now.
	TasksMax *TasksMax `yaml:"tasks_max,omitempty" json:"tasks_max,omitempty"`
}

// TasksMax is a systemd unit's TasksMax=, in tasks (threads and
// processes of its cgroup), or TasksInfinity. In YAML and JSON it is a
// whole number or "infinity".
type TasksMax uint64

// TasksInfinity is TasksMax=infinity: no limit (pids.max "max").
const TasksInfinity TasksMax = math.MaxUint64

// MaxTasks is the largest number a TasksMax= can take: the kernel's
// PID_MAX_LIMIT on 64-bit, the most a cgroup's pids.max accepts
// (pids_max_write refuses more with EINVAL, kernel/cgroup/pids.c).
const MaxTasks = 4194304

// TasksMaxWant says what a tasks_max takes, for errors.
const TasksMaxWant = `a whole number of tasks (1..4194304) or "infinity"`

// String is the value as systemd's TasksMax= takes it: "infinity" or the
// number of tasks.
func (m TasksMax) String() string {
	if m == TasksInfinity {
		return "infinity"
	}
	return strconv.FormatUint(uint64(m), 10)
}

// UnmarshalYAML reads "infinity" or a whole number in decimal digits; the
// range is Validate's. Errors: anything else.
func (m *TasksMax) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want %s", TasksMaxWant)
	}
	if n.Value == "infinity" {
		*m = TasksInfinity
		return nil
	}
	v, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil || !decimalRE.MatchString(n.Value) || TasksMax(v) == TasksInfinity {
		return fmt.Errorf("want %s", TasksMaxWant)
	}
	*m = TasksMax(v)
	return nil
}

// MarshalYAML writes "infinity" or the number.
func (m TasksMax) MarshalYAML() (any, error) {
	if m == TasksInfinity {
		return "infinity", nil
	}
	return uint64(m), nil
}

// MarshalJSON writes "infinity" or the number.
func (m TasksMax) MarshalJSON() ([]byte, error) {
	if m == TasksInfinity {
		return []byte(`"infinity"`), nil
	}
	return []byte(m.String()), nil
}

// UnmarshalJSON reads what MarshalJSON writes. Errors: anything else.
func (m *TasksMax) UnmarshalJSON(b []byte) error {
	if string(b) == `"infinity"` {
		*m = TasksInfinity
		return nil
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("tasks_max %s: want %s", b, TasksMaxWant)
	}
	*m = TasksMax(v)
	return nil
}

// PreflightTarget is the load a profile's host must carry; it lets
// `hostprep preflight --profile P` run with no other flags.
type PreflightTarget struct {
	// Sockets is the number of concurrently open TCP connections.
	Sockets int `yaml:"sockets" json:"sockets"`
	// Role is broker, loadgen or iotdb.
	Role string `yaml:"role" json:"role"`
	// ConnRate is the expected rate of new connections, connections/s
	// (written 2000, 2000/s or 120000/m; see internal/rate).
	ConnRate rate.PerSecond `yaml:"conn_rate,omitempty" json:"conn_rate,omitempty"`
	// Destinations are ip:port endpoints a loadgen connects to.
	Destinations []string `yaml:"destinations,omitempty" json:"destinations,omitempty"`
}

// MQTTThresholds decide the MQTT probe's verdict. A nil/zero field is
// not checked, except where noted.
type MQTTThresholds struct {
	// Loss is the highest fraction (0..1) of messages lost.
	Loss *float64 `yaml:"loss,omitempty" json:"loss,omitempty"`
	// ConnectP95 is the highest p95 of CONNECT->CONNACK latency.
	ConnectP95 time.Duration `yaml:"connect_p95,omitempty" json:"connect_p95,omitempty"`
	// AckP95 is the highest p95 of PUBLISH->PUBACK/PUBCOMP latency.
	AckP95 time.Duration `yaml:"ack_p95,omitempty" json:"ack_p95,omitempty"`
	// E2EP99 is the highest p99 of publish (scheduled time) -> subscriber receipt.
	E2EP99 time.Duration `yaml:"e2e_p99,omitempty" json:"e2e_p99,omitempty"`
	// ConnectFailRate is the highest fraction (0..1) of failed connects.
	ConnectFailRate *float64 `yaml:"connect_fail_rate,omitempty" json:"connect_fail_rate,omitempty"`
}

// MQTTProbe is the MQTT mini-load a profile runs (see loadprobe/mqtt).
type MQTTProbe struct {
	// Broker is tcp://host:port or mqtts://; empty means the embedded broker.
	Broker      string         `yaml:"broker,omitempty" json:"broker,omitempty"`
	Clients     int            `yaml:"clients,omitempty" json:"clients,omitempty"`
	ConnRate    rate.PerSecond `yaml:"conn_rate,omitempty" json:"conn_rate,omitempty"` // connections/s: 500, 500/s or 30000/m
	QoS         int            `yaml:"qos,omitempty" json:"qos,omitempty"`
	Size        int            `yaml:"size,omitempty" json:"size,omitempty"` // payload bytes
	PubInterval time.Duration  `yaml:"pub_interval,omitempty" json:"pub_interval,omitempty"`
	Keepalive   time.Duration  `yaml:"keepalive,omitempty" json:"keepalive,omitempty"`
	Duration    time.Duration  `yaml:"duration,omitempty" json:"duration,omitempty"`
	Thresholds  MQTTThresholds `yaml:"thresholds,omitempty" json:"thresholds,omitempty"`

	// given holds the keys the loaded profile wrote (see Has).
	given map[string]bool
}

// Has reports whether the section sets key, its YAML name ("qos",
// "thresholds.loss"): for a section loaded from a file or --set, whether
// the key was written there (so qos: 0 is set and a missing qos is not);
// for one built in code, whether the field is non-zero. A key that is not
// set means the probe's built-in default (mqtt.Resolve).
func (m *MQTTProbe) Has(key string) bool { return m != nil && has(m.given, reflect.ValueOf(*m), key) }

// IoTDBThresholds decide the IoTDB probe's verdict.
type IoTDBThresholds struct {
	// MaxErrorRate is the highest fraction (0..1) of failed operations in any step.
	MaxErrorRate *float64 `yaml:"max_error_rate,omitempty" json:"max_error_rate,omitempty"`
	// P95 is the highest p95 response time at TargetStep.
	P95 time.Duration `yaml:"p95,omitempty" json:"p95,omitempty"`
	// TargetStep is the worker count P95 and MinTPS apply to; 0 = last step.
	TargetStep int `yaml:"target_step,omitempty" json:"target_step,omitempty"`
	// MinTPS is the lowest acceptable throughput (operations/s) at TargetStep.
	MinTPS rate.PerSecond `yaml:"min_tps,omitempty" json:"min_tps,omitempty"` // 1000, 1000/s or 60000/m
}

// IoTDBProbe is the IoTDB step load a profile runs (see loadprobe/iotdb).
type IoTDBProbe struct {
	// Host:Port of the IoTDB DataNode RPC (default port 6667).
	Host         string          `yaml:"host,omitempty" json:"host,omitempty"`
	Port         int             `yaml:"port,omitempty" json:"port,omitempty"`
	User         string          `yaml:"user,omitempty" json:"user,omitempty"`
	Scenario     string          `yaml:"scenario,omitempty" json:"scenario,omitempty"` // write|batch|mixed
	Steps        []int           `yaml:"steps,omitempty" json:"steps,omitempty"`       // workers per step
	StepDuration time.Duration   `yaml:"step_duration,omitempty" json:"step_duration,omitempty"`
	PoolSize     int             `yaml:"pool_size,omitempty" json:"pool_size,omitempty"`
	WaitTimeout  time.Duration   `yaml:"wait_timeout,omitempty" json:"wait_timeout,omitempty"`
	FetchSize    int             `yaml:"fetch_size,omitempty" json:"fetch_size,omitempty"`
	Thresholds   IoTDBThresholds `yaml:"thresholds,omitempty" json:"thresholds,omitempty"`

	// given holds the keys the loaded profile wrote (see Has).
	given map[string]bool
}

// Has is MQTTProbe.Has for the IoTDB section ("pool_size",
// "thresholds.p95"; iotdb.Resolve).
func (d *IoTDBProbe) Has(key string) bool { return d != nil && has(d.given, reflect.ValueOf(*d), key) }

// has answers Has: from given when the section was loaded, else whether
// the field at the dotted YAML key of v is non-zero.
func has(given map[string]bool, v reflect.Value, key string) bool {
	if given != nil {
		return given[key]
	}
	v = fieldAt(v, key)
	return v.IsValid() && !v.IsZero()
}

// fieldAt is the field of struct v at the dotted YAML key ("thresholds.p95"),
// or the zero Value when there is none (a segment not a field, or a step
// into something not a struct, such as "steps.0").
func fieldAt(v reflect.Value, key string) reflect.Value {
	for _, seg := range strings.Split(key, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		f, ok := fieldByYAML(v.Type(), seg)
		if !ok {
			return reflect.Value{}
		}
		v = v.FieldByIndex(f.Index)
	}
	return v
}

// givenUnder lists the dotted keys src records under prefix (the keys a
// loaded section wrote); never nil, so Has answers from it.
func (s *sources) givenUnder(prefix ...string) map[string]bool {
	out := map[string]bool{}
	pre := pathKey(prefix...) + pathSep
	for k := range s.pos {
		if rest, ok := strings.CutPrefix(k, pre); ok {
			out[strings.ReplaceAll(rest, pathSep, ".")] = true
		}
	}
	return out
}

// Where is the prefix of an error about the value at path (segments such
// as "probe", "mqtt", "size"): "file:line:col: " where it was written,
// `--set "k=v": ` when it came from --set, else "profile NAME: ". Probes
// use it to point their own validation errors at the profile.
func (p *Profile) Where(path ...string) string { return p.where(path...) }

// Probes are the probes a profile runs in `hostprep ready`; a nil probe
// is not run.
type Probes struct {
	MQTT  *MQTTProbe  `yaml:"mqtt,omitempty" json:"mqtt,omitempty"`
	IoTDB *IoTDBProbe `yaml:"iotdb,omitempty" json:"iotdb,omitempty"`
}

// Profile is a named, validated set of host settings plus the load the host
// must then carry and the probes that prove it.
type Profile struct {
	// Name is the built-in name or the file's base name without extension.
	Name string `yaml:"name,omitempty" json:"name"`
	// Source is what Load was given to find it: the built-in name, or
	// the file's absolute path, so that a command suggested later (apply
	// again) names it the way --profile takes it; "" for Parse and for a
	// profile built in code.
	Source string `yaml:"-" json:"-"`
	// Sets are the --set key=value overrides Load applied, in order, so
	// that a suggested command repeats them.
	Sets []string `yaml:"-" json:"-"`
	// Description says what the profile is for and where its numbers come from.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Include lists profiles (built-in names or paths relative to this
	// file) merged before this one; later wins, cycles are an error.
	Include []string `yaml:"include,omitempty" json:"include,omitempty"`
	// Sysctl maps kernel keys, spelled as the kernel does
	// (net.ipv4.ip_local_port_range), to settings.
	Sysctl  map[string]Sysctl `yaml:"sysctl,omitempty" json:"sysctl,omitempty"`
	Limits  Limits            `yaml:"limits,omitempty" json:"limits,omitempty"`
	Systemd Systemd           `yaml:"systemd,omitempty" json:"systemd,omitempty"`
	// ReservePorts are kept out of the ephemeral port range by adding them
	// to net.ipv4.ip_local_reserved_ports (merged with what is there).
	ReservePorts []int `yaml:"reserve_ports,omitempty" json:"reserve_ports,omitempty"`
	// Preflight is the target `hostprep preflight --profile` checks.
	Preflight *PreflightTarget `yaml:"preflight,omitempty" json:"preflight,omitempty"`
	// Probe holds the probes `hostprep ready` runs and their thresholds.
	Probe Probes `yaml:"probe,omitempty" json:"probe,omitempty"`

	// src records where each value came from (file:line:col or --set) so
	// validation errors can point at it; nil for profiles built in code.
	src *sources
}
