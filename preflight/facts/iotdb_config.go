package facts

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/textfile"
)

// The IoTDB release configuration read with --iotdb-home DIR. Property
// names are those of IoTDB 2.0's conf/iotdb-system.properties; their
// defaults are read from the release's own iotdb-system.properties.template
// (packed in lib/node-commons-VERSION.jar), the one file that lists every
// property, so a release that changes a default is judged by its own.

// IoTDB DataNode properties preflight reads.
const (
	// PropMaxClients is the most client connections the DataNode's client
	// RPC port serves at once ("The maximum number of concurrent clients
	// that can be connected to the dataNode", default 1000).
	PropMaxClients = "dn_rpc_max_concurrent_client_num"
	// PropFrameSize is the largest Thrift frame the DataNode accepts, in
	// bytes; 0 means min(64 MiB, DataNode heap / 64).
	PropFrameSize = "dn_thrift_max_frame_size"
	// PropRPCPort is the DataNode's client RPC port (default 6667).
	PropRPCPort = "dn_rpc_port"
)

// iotdbBuiltinDefaults are the IoTDB 2.0.10 template's defaults, used only
// when the release directory holds no template.
var IotdbBuiltinDefaults = map[string]string{PropMaxClients: "1000", PropFrameSize: "0", PropRPCPort: "6667"}

// IoTDBSetting is one configuration value and where it came from.
type IoTDBSetting struct {
	// Name is the property or variable (dn_rpc_max_concurrent_client_num,
	// MEMORY_SIZE).
	Name string `json:"name"`
	// Value as written, or as computed for a derived value.
	Value string `json:"value"`
	// File is where it is set, or the template/script that gives the
	// default.
	File string `json:"file"`
	// Default is true when no configuration file sets it.
	Default bool `json:"default,omitempty"`
}

// String is "name=value (file)" or "name=value (default, file)".
func (s IoTDBSetting) String() string {
	if s.Default {
		return fmt.Sprintf("%s=%s (default, %s)", s.Name, s.Value, s.File)
	}
	return fmt.Sprintf("%s=%s (%s)", s.Name, s.Value, s.File)
}

// JVMMemory is the heap and direct memory a node's env script gives its
// JVM, in bytes (0 when computed from RAM at start and RAM is unknown).
type JVMMemory struct {
	// Script is the env script (conf/datanode-env.sh).
	Script string `json:"script"`
	// MemorySize is MEMORY_SIZE as set ("" = the script's share of RAM).
	MemorySize string `json:"memory_size,omitempty"`
	// HeapOverride and DirectOverride are ON_HEAP_MEMORY and
	// OFF_HEAP_MEMORY when uncommented.
	HeapOverride   string `json:"on_heap_memory,omitempty"`
	DirectOverride string `json:"off_heap_memory,omitempty"`
}

// IoTDBConfig is what preflight reads of an IoTDB release.
type IoTDBConfig struct {
	// Home is the --iotdb-home directory.
	Home string `json:"home"`
	// File is the DataNode's iotdb-system.properties that was read.
	File string `json:"file,omitempty"`
	// Properties are the DataNode properties above, keyed by name.
	Properties map[string]IoTDBSetting `json:"properties"`
	// DataNode and ConfigNode are the env scripts' memory settings; nil
	// when the script is absent.
	DataNode   *JVMMemory `json:"datanode,omitempty"`
	ConfigNode *JVMMemory `json:"confignode,omitempty"`
	// Version is the release's version, from its lib/node-commons-V.jar
	// ("2.0.10"); "" when no jar was found.
	Version string `json:"version,omitempty"`
	// Ignored are the lines of iotdb-system.properties that this release
	// does not read: a property its own template
	// (iotdb-system.properties.template) does not list. Nil when no
	// template was found (then nothing can be told).
	Ignored []IgnoredProperty `json:"ignored,omitempty"`
}

// IgnoredProperty is a configuration line the release does not read.
type IgnoredProperty struct {
	// Name and Value as written; At is FILE:LINE.
	Name  string `json:"name"`
	Value string `json:"value"`
	At    string `json:"at"`
	// Use is the property the release reads instead, where its template
	// has the name with a node prefix (thrift_max_frame_size, an IoTDB 1.x
	// name: dn_thrift_max_frame_size); "" when none is known.
	Use string `json:"use,omitempty"`
}

// ReadIoTDBConfig reads an IoTDB release at home: the one-folder layout
// (home/conf/iotdb-system.properties, home/conf/datanode-env.sh,
// home/conf/confignode-env.sh, home/lib) or the per-node one of the
// server and confignode zips (home/datanode/conf, home/confignode/conf).
// A directory holding no iotdb-system.properties is
// exitcode.BadInput naming the paths looked at.
func ReadIoTDBConfig(home string) (*IoTDBConfig, error) {
	dn := firstExisting(filepath.Join(home, "conf"), filepath.Join(home, "datanode", "conf"))
	props := filepath.Join(dn, "iotdb-system.properties")
	if _, err := os.Stat(props); err != nil {
		return nil, exitcode.BadInputf("--iotdb-home %s: no conf/iotdb-system.properties or datanode/conf/iotdb-system.properties there; pass the directory of the unpacked IoTDB release (the one holding conf/ and lib/)", home)
	}
	c := &IoTDBConfig{Home: home, File: props, Properties: map[string]IoTDBSetting{}}
	defaults, defSrc := TemplateDefaults(filepath.Join(filepath.Dir(dn), "lib"))
	set, err := readProperties(props)
	if err != nil {
		return nil, exitcode.BadInputf("--iotdb-home %s: %v", home, err)
	}
	if defSrc != "" {
		c.Version = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(strings.SplitN(defSrc, "!/", 2)[0]), "node-commons-"), ".jar")
		if c.Ignored, err = ignoredProperties(props, defaults); err != nil {
			return nil, exitcode.BadInputf("--iotdb-home %s: %v", home, err)
		}
	}
	for _, name := range []string{PropMaxClients, PropFrameSize, PropRPCPort} {
		if v, ok := set[name]; ok {
			c.Properties[name] = IoTDBSetting{Name: name, Value: v, File: props}
		} else if v, ok := defaults[name]; ok {
			c.Properties[name] = IoTDBSetting{Name: name, Value: v, File: defSrc, Default: true}
		} else {
			c.Properties[name] = IoTDBSetting{Name: name, Value: IotdbBuiltinDefaults[name], File: "IoTDB 2.0.10 iotdb-system.properties.template", Default: true}
		}
	}
	for _, n := range []struct {
		dst  **JVMMemory
		dirs []string
		file string
	}{
		{&c.DataNode, []string{filepath.Join(home, "conf"), filepath.Join(home, "datanode", "conf")}, "datanode-env.sh"},
		{&c.ConfigNode, []string{filepath.Join(home, "conf"), filepath.Join(home, "confignode", "conf")}, "confignode-env.sh"},
	} {
		for _, d := range n.dirs {
			if m, err := readEnvScript(filepath.Join(d, n.file)); err == nil {
				*n.dst = m
				break
			}
		}
	}
	return c, nil
}

func firstExisting(paths ...string) string {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return paths[0]
}

// readProperties reads key=value lines of a Java properties file (no
// continuation lines: IoTDB's files use none).
func readProperties(path string) (map[string]string, error) {
	return textfile.Parse(path, parseProperties)
}

func parseProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := textfile.Scanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

// ignoredProperties lists the lines of the properties file at path
// whose property the release's template (known: every property it
// reads) does not have, with the node-prefixed name it reads instead
// where the template has one (dn_, cn_).
func ignoredProperties(path string, known map[string]string) ([]IgnoredProperty, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []IgnoredProperty
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			continue
		}
		if _, read := known[k]; read {
			continue
		}
		ig := IgnoredProperty{Name: k, Value: strings.TrimSpace(v), At: fmt.Sprintf("%s:%d", path, i+1)}
		for _, prefix := range []string{"dn_", "cn_"} {
			if _, ok := known[prefix+k]; ok && ig.Use == "" {
				ig.Use = prefix + k
			}
		}
		out = append(out, ig)
	}
	return out, nil
}

// templateDefaults reads iotdb-system.properties.template from the
// release's lib/node-commons-*.jar: every property with its default.
func TemplateDefaults(lib string) (map[string]string, string) {
	jars, _ := filepath.Glob(filepath.Join(lib, "node-commons-*.jar"))
	for _, j := range jars {
		zr, err := zip.OpenReader(j)
		if err != nil {
			continue
		}
		for _, f := range zr.File {
			if f.Name != "iotdb-system.properties.template" {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				break
			}
			m, err := parseProperties(rc)
			rc.Close()
			if err == nil {
				zr.Close()
				return m, j + "!/" + f.Name
			}
		}
		zr.Close()
	}
	return nil, ""
}

// readEnvScript reads the memory settings of a datanode-env.sh or
// confignode-env.sh: MEMORY_SIZE= and uncommented ON_HEAP_MEMORY= /
// OFF_HEAP_MEMORY= lines at the start of a line.
func readEnvScript(path string) (*JVMMemory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := &JVMMemory{Script: path}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch k {
		case "MEMORY_SIZE":
			m.MemorySize = v
		case "ON_HEAP_MEMORY":
			if !strings.Contains(v, "$") { // the computed assignment inside calculate_memory_sizes
				m.HeapOverride = v
			}
		case "OFF_HEAP_MEMORY":
			if !strings.Contains(v, "$") {
				m.DirectOverride = v
			}
		}
	}
	return m, nil
}

// parseJVMSize parses "2G", "2048M", "512m" into bytes.
func parseJVMSize(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'G', 'g':
		mult, s = 1<<30, s[:len(s)-1]
	case 'M', 'm':
		mult, s = 1<<20, s[:len(s)-1]
	case 'K', 'k':
		mult, s = 1<<10, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n * mult, true
}

// HeapAndDirect returns the JVM heap and direct memory in bytes the env
// script computes on a host with memTotal bytes of RAM, following
// calculate_memory_sizes in IoTDB 2.0's datanode-env.sh and
// confignode-env.sh: the node's memory is MEMORY_SIZE, else its share of
// RAM (DataNode 1/2; ConfigNode 3/10, at most 8 GiB); the heap is 3/4 of
// it below 4 GiB, 4/5 below 16 GiB, 7/8 below 128 GiB, else all but
// 16 GiB; direct memory is the rest. ON_HEAP_MEMORY / OFF_HEAP_MEMORY
// replace the computed values. how says which applied.
func (m *JVMMemory) HeapAndDirect(memTotal uint64, confignode bool) (heap, direct int64, how string) {
	totalMB := int64(memTotal >> 20)
	var sizeMB int64
	if b, ok := parseJVMSize(m.MemorySize); ok {
		sizeMB, how = b>>20, "MEMORY_SIZE="+m.MemorySize
	} else if confignode {
		sizeMB, how = min(totalMB/10*3, 8192), "MEMORY_SIZE unset: 3/10 of RAM, at most 8 GiB"
	} else {
		sizeMB, how = totalMB/2, "MEMORY_SIZE unset: half of RAM"
	}
	var heapMB int64
	switch {
	case sizeMB < 4096:
		heapMB = sizeMB / 4 * 3
	case sizeMB < 16384:
		heapMB = sizeMB / 5 * 4
	case sizeMB < 131072:
		heapMB = sizeMB / 8 * 7
	default:
		heapMB = sizeMB - 16384
	}
	heap, direct = heapMB<<20, (sizeMB-heapMB)<<20
	if b, ok := parseJVMSize(m.HeapOverride); ok {
		heap, how = b, how+", ON_HEAP_MEMORY="+m.HeapOverride
	}
	if b, ok := parseJVMSize(m.DirectOverride); ok {
		direct, how = b, how+", OFF_HEAP_MEMORY="+m.DirectOverride
	}
	return heap, direct, how
}

// JVMFlags are the memory flags of a running JVM's command line.
type JVMFlags struct {
	// Heap is -Xmx and Direct -XX:MaxDirectMemorySize, bytes (0 = not set:
	// the JVM's own default).
	Heap   int64 `json:"heap_bytes"`
	Direct int64 `json:"direct_bytes"`
	// Source is where they were read ("/proc/PID/cmdline").
	Source string `json:"source"`
}

// parseJVMFlags picks -Xmx and -XX:MaxDirectMemorySize out of a NUL-
// separated command line; nil when argv[0] is not java. Only those two
// values are kept: a command line may carry secrets (-D...password=).
func ParseJVMFlags(cmdline []byte, source string) *JVMFlags {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || filepath.Base(args[0]) != "java" {
		return nil
	}
	j := &JVMFlags{Source: source}
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "-Xmx"); ok {
			j.Heap, _ = parseJVMSize(v)
		}
		if v, ok := strings.CutPrefix(a, "-XX:MaxDirectMemorySize="); ok {
			j.Direct, _ = parseJVMSize(v)
		}
	}
	return j
}
