package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// IoTDB server checks (role iotdb): the kernel's memory-map limit for the
// DataNode's JVM, and with --iotdb-home the release's own configuration
// against the load: client connections, Thrift frame size, JVM memory.

// MinMaxMapCount is the vm.max_map_count the built-in iotdb profile sets
// (common practice for JVM data stores; the kernel default is 65530).
const MinMaxMapCount = 262144

// bytesPerPoint is the size of one point in an insertTablet request: an
// 8-byte timestamp and an 8-byte value (INT64/DOUBLE); text values are
// larger.
const BytesPerPoint = 16

// defaultMaxFrame is the Thrift frame limit when dn_thrift_max_frame_size
// is 0: min(64 MiB, DataNode heap / 64).
const defaultMaxFrame = 64 << 20

var iotdbOnly = []facts.Role{facts.IoTDB}

func init() {
	register(CheckDef{ID: "iotdb.max_map_count", Doc: "vm.max_map_count >= 262144 (memory maps of the DataNode's JVM)", Roles: iotdbOnly, Func: checkIoTDBMapCount})
	register(CheckDef{ID: "iotdb.clients", Doc: "dn_rpc_max_concurrent_client_num >= SessionPool size x load generators (--iotdb-home)", Roles: iotdbOnly, Func: checkIoTDBClients})
	register(CheckDef{ID: "iotdb.frame_size", Doc: "Thrift max frame size >= the largest batch (--iotdb-home, --batch-points)", Roles: iotdbOnly, Func: checkIoTDBFrame})
	register(CheckDef{ID: "iotdb.memory", Doc: "JVM heap + direct memory of the DataNode (running, or --iotdb-home) and ConfigNode (running, or --iotdb-home) <= RAM", Roles: iotdbOnly, Func: checkIoTDBMemory})
}

func checkIoTDBMapCount(f *facts.Facts, t facts.Target) verdict.Check {
	n, ok := f.SysInt("vm.max_map_count")
	if !ok {
		return skip("vm.max_map_count not readable")
	}
	obs := fmt.Sprintf("vm.max_map_count %d", n)
	exp := fmt.Sprintf(">= %d memory-map areas per process", MinMaxMapCount)
	if n >= MinMaxMapCount {
		return pass(fmt.Sprintf("vm.max_map_count %d leaves the DataNode room for its memory maps", n), obs, exp)
	}
	return warn(fmt.Sprintf("vm.max_map_count %d is below %d: a DataNode mapping many TsFiles and direct buffers fails with \"Map failed\" / OutOfMemoryError once it is used up (65530 is the kernel default)", n, MinMaxMapCount),
		obs, exp, mapCountRemedy(t))
}

// mapCountRemedy applies vm.max_map_count MinMaxMapCount with the target's
// profile (the built-in iotdb profile sets it).
func mapCountRemedy(t facts.Target) string {
	return tuneApply(t, AtLeast(t, "vm.max_map_count", MinMaxMapCount)) + " (it sets it now and at boot; the built-in iotdb profile sets it too)"
}

// propInt returns a numeric property of the release read with
// --iotdb-home, or the check to give instead: a skip without
// --iotdb-home, a warning when the value is not a whole number (IoTDB
// then refuses to start).
func propInt(f *facts.Facts, name string) (int64, facts.IoTDBSetting, *verdict.Check) {
	if f.IoTDB == nil {
		sk := skip("IoTDB configuration not read: hostprep preflight --iotdb-home DIR reads it (the unpacked release holding conf/iotdb-system.properties)")
		return 0, facts.IoTDBSetting{}, &sk
	}
	s := f.IoTDB.Properties[name]
	n, err := strconv.ParseInt(s.Value, 10, 64)
	if err != nil || n < 0 {
		w := warn(fmt.Sprintf("%s is not a whole number >= 0", s), s.String(), "a whole number", "set "+name+" to a whole number in "+s.File)
		return 0, s, &w
	}
	return n, s, nil
}

func checkIoTDBClients(f *facts.Facts, t facts.Target) verdict.Check {
	n, s, instead := propInt(f, facts.PropMaxClients)
	if instead != nil {
		return *instead
	}
	d := t.IoTDB
	if d.PoolSize == 0 {
		return skip(fmt.Sprintf("%s; SessionPool size not given: hostprep preflight --pool-size N (and --loadgens N) compares it", s))
	}
	need := int64(d.PoolSize) * int64(max(d.LoadGenerators, 1))
	obs := s.String()
	exp := fmt.Sprintf(">= %s (SessionPool size %d x %d load generators)", plural.N(need, "client"), d.PoolSize, max(d.LoadGenerators, 1))
	if n >= need {
		return pass(fmt.Sprintf("the DataNode serves up to %s, enough for %s", plural.N(n, "client"), plural.N(need, "session")), obs, exp)
	}
	return fail(fmt.Sprintf("%s=%d < %s (SessionPool size %d x %d load generators): sessions beyond %d wait or are refused", facts.PropMaxClients, n, plural.N(need, "session"), d.PoolSize, max(d.LoadGenerators, 1), n),
		obs, exp, fmt.Sprintf("set %s=%d in %s and restart the DataNode (effectiveMode: restart), or shrink the pools", facts.PropMaxClients, need, propFile(f.IoTDB, s)))
}

// propFile is where to set a property: the file that sets it, else the
// release's conf/iotdb-system.properties.
func propFile(c *facts.IoTDBConfig, s facts.IoTDBSetting) string {
	if !s.Default {
		return s.File
	}
	if c.File != "" {
		return c.File
	}
	if p, ok := c.Properties[facts.PropRPCPort]; ok && !p.Default {
		return p.File
	}
	return c.Home + "/conf/iotdb-system.properties"
}

func checkIoTDBFrame(f *facts.Facts, t facts.Target) verdict.Check {
	n, s, instead := propInt(f, facts.PropFrameSize)
	if instead != nil {
		return *instead
	}
	frame, how := n, "as set"
	if n == 0 {
		frame, how = defaultMaxFrame, "0 means min(64 MiB, DataNode heap / 64)"
		if j := f.TargetJVM; j != nil && j.Heap > 0 {
			frame = min(frame, j.Heap/64)
			how += fmt.Sprintf(", heap %s (-Xmx of the running DataNode, %s)", Mib(float64(j.Heap)), j.Source)
		} else if dn := f.IoTDB.DataNode; dn != nil && f.MemTotal > 0 {
			heap, _, _ := dn.HeapAndDirect(f.MemTotal, false)
			frame = min(frame, heap/64)
			how += fmt.Sprintf(", heap %s", Mib(float64(heap)))
		}
	}
	if t.IoTDB.BatchPoints == 0 {
		return skip(fmt.Sprintf("%s: frames up to %s (%s); batch size not given: hostprep preflight --batch-points N compares it", s, plural.N(frame, "byte"), how))
	}
	need := int64(t.IoTDB.BatchPoints) * BytesPerPoint
	obs := fmt.Sprintf("%s: frames up to %s (%s)", s, plural.N(frame, "byte"), how)
	exp := fmt.Sprintf(">= %s (%s x %s, numeric values)", plural.N(need, "byte"), plural.N(t.IoTDB.BatchPoints, "point"), plural.N(BytesPerPoint, "byte"))
	if frame >= need {
		return pass(fmt.Sprintf("Thrift frames up to %s carry batches of %s", plural.N(frame, "byte"), plural.N(t.IoTDB.BatchPoints, "point")), obs, exp)
	}
	summary := fmt.Sprintf("Thrift max frame %s < a batch of %s (%s): the DataNode closes the connection on such a request", plural.N(frame, "byte"), plural.N(t.IoTDB.BatchPoints, "point"), plural.N(need, "byte"))
	remedy := fmt.Sprintf("set %s=%d in %s and restart the DataNode, or send smaller batches", facts.PropFrameSize, need*2, propFile(f.IoTDB, s))
	if said, names := ignoredFor(f.IoTDB, facts.PropFrameSize); len(said) > 0 {
		summary += "; " + strings.Join(said, "; ") + ", so editing it has no effect"
		remedy = fmt.Sprintf("set %s=%d in %s (not read: %s; remove it) and restart the DataNode, or send smaller batches", facts.PropFrameSize, need*2, propFile(f.IoTDB, s), strings.Join(names, ", "))
	}
	return fail(summary, obs, exp, remedy)
}

func checkIoTDBMemory(f *facts.Facts, t facts.Target) verdict.Check {
	c := f.IoTDB
	if f.MemTotal == 0 {
		return skip("RAM unknown")
	}
	var heap, direct int64
	var obs, remedy string
	switch j := f.TargetJVM; {
	case j != nil && j.Heap > 0:
		heap, direct = j.Heap, j.Direct
		if direct == 0 {
			direct = heap // HotSpot: MaxDirectMemorySize defaults to the heap size
		}
		obs = fmt.Sprintf("running DataNode heap %s (-Xmx) + direct %s (%s)", Mib(float64(heap)), Mib(float64(direct)), j.Source)
		remedy = "restart the DataNode with a smaller -Xmx / -XX:MaxDirectMemorySize (MEMORY_SIZE in conf/datanode-env.sh)"
	case c != nil && c.DataNode != nil:
		var how string
		heap, direct, how = c.DataNode.HeapAndDirect(f.MemTotal, false)
		obs = fmt.Sprintf("DataNode heap %s + direct %s (%s: %s)", Mib(float64(heap)), Mib(float64(direct)), c.DataNode.Script, how)
		remedy = fmt.Sprintf("set MEMORY_SIZE (e.g. MEMORY_SIZE=%dM) in %s, or ON_HEAP_MEMORY / OFF_HEAP_MEMORY", int64(0.4*float64(f.MemTotal))>>20, c.DataNode.Script)
	default:
		return skip("the DataNode's memory is not known: no running DataNode found (hostprep preflight --pid, --service or its listener) and no conf/datanode-env.sh (hostprep preflight --iotdb-home)")
	}
	total := heap + direct
	switch j := f.ConfigNodeJVM; {
	case j != nil && j.Heap > 0:
		h, d := j.Heap, j.Direct
		if d == 0 {
			d = h // HotSpot: MaxDirectMemorySize defaults to the heap size
		}
		total += h + d
		obs += fmt.Sprintf("; running ConfigNode heap %s (-Xmx) + direct %s (%s)", Mib(float64(h)), Mib(float64(d)), j.Source)
	case c != nil && c.ConfigNode != nil:
		h, d, how := c.ConfigNode.HeapAndDirect(f.MemTotal, true)
		total += h + d
		obs += fmt.Sprintf("; ConfigNode heap %s + direct %s (%s: %s)", Mib(float64(h)), Mib(float64(d)), c.ConfigNode.Script, how)
	}
	ram := float64(f.MemTotal)
	obs += fmt.Sprintf("; RAM %s", Mib(ram))
	exp := fmt.Sprintf("<= 80%% of RAM (%s): the JVMs also need metaspace, thread stacks and the page cache for TsFiles", Mib(0.8*ram))
	switch {
	case float64(total) > ram:
		return fail(fmt.Sprintf("JVM heap + direct memory %s > RAM %s: the kernel's OOM killer ends a node under load", Mib(float64(total)), Mib(ram)), obs, exp, remedy)
	case float64(total) > 0.8*ram:
		return warn(fmt.Sprintf("JVM heap + direct memory %s is %.0f%% of RAM %s, leaving little for the page cache and the JVMs' other memory", Mib(float64(total)), 100*float64(total)/ram, Mib(ram)), obs, exp, remedy)
	}
	return pass(fmt.Sprintf("JVM heap + direct memory %s fits in RAM %s", Mib(float64(total)), Mib(ram)), obs, exp)
}
