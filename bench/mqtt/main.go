// Command mqtt-bench measures hostprep's MQTT probe against a running
// mosquitto and prints the efficiency figures of issue 4:
//
//   - per idle connection: RSS (KiB) and goroutines, for hostprep's lean
//     client and, for comparison, paho.mqtt.golang (slope between two
//     connection counts, each in a fresh child process, after GC);
//   - CPU per message (µs, utime+stime from /proc/PID/stat and the child's
//     rusage) of the probe and of the broker at QoS 1, 200 B;
//   - the highest message rate the pair sustains with zero loss (rate
//     sweep, each step a full probe run);
//   - whether the probe holds 15,000 connections.
//
// Usage (see bench/README.md): scripts/mosquitto.sh start, then
//
//	go run ./bench/mqtt -broker tcp://127.0.0.1:18831 -broker-pid $(cat /tmp/hostprep-mosquitto-18831/mosquitto.pid)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
	"golang.org/x/sys/unix"
)

// holdResult is what a "hold" child reports.
type holdResult struct {
	Client     string `json:"client"`
	N          int    `json:"n"`
	Connected  int64  `json:"connected"`
	RSSKiB     int64  `json:"rss_kib"`
	Goroutines int    `json:"goroutines"`
	BaseRSSKiB int64  `json:"base_rss_kib"`
	BaseGor    int    `json:"base_goroutines"`
}

// loadResult is what a "load" child reports.
type loadResult struct {
	Clients    int              `json:"clients"`
	Rate       float64          `json:"rate"`
	Published  int64            `json:"published"`
	Received   int64            `json:"received"`
	Lost       int64            `json:"lost"`
	Unacked    int64            `json:"unacked"`
	ConnectsOK int64            `json:"connects_ok"`
	Failed     int64            `json:"connects_failed"`
	FailedBy   map[string]int64 `json:"connects_failed_by,omitempty"`
	AckP99     float64          `json:"ack_p99_ms"`
	E2EP99     float64          `json:"e2e_p99_ms"`
	Overruns   int64            `json:"overruns"`
	Err        string           `json:"err,omitempty"`
}

var benchWorkers, benchProcs int

// benchQoS is the QoS of the load children's publishes (-qos).
var benchQoS = 1

func rssKiB() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

func settle() (int64, int) {
	runtime.GC()
	debug.FreeOSMemory()
	time.Sleep(300 * time.Millisecond)
	return rssKiB(), runtime.NumGoroutine()
}

func hold(broker, client string, n int) holdResult {
	r := holdResult{Client: client, N: n}
	r.BaseRSSKiB, r.BaseGor = settle()
	switch client {
	case "lean":
		cfg := mqtt.Defaults()
		cfg.Broker, cfg.Clients, cfg.ConnRate = broker, n, 2000
		cfg.PubInterval, cfg.Duration = time.Hour, time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _, _ = mqtt.Run(ctx, cfg); close(done) }()
		time.Sleep(time.Duration(float64(n)/2000*float64(time.Second)) + 3*time.Second)
		r.RSSKiB, r.Goroutines = settle()
		r.Connected = int64(n) // checked by the load runs; Run has no live counter
		cancel()
		<-done
	case "paho":
		var clients []paho.Client
		var mu sync.Mutex
		var ok atomic.Int64
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					o := paho.NewClientOptions().AddBroker(broker).SetClientID(fmt.Sprintf("bench-paho-%d-%d", os.Getpid(), i)).
						SetKeepAlive(300 * time.Second).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false)
					c := paho.NewClient(o)
					if t := c.Connect(); t.WaitTimeout(10*time.Second) && t.Error() == nil {
						ok.Add(1)
						mu.Lock()
						clients = append(clients, c)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		r.Connected = ok.Load()
		r.RSSKiB, r.Goroutines = settle()
		for _, c := range clients {
			c.Disconnect(0)
		}
	}
	return r
}

func load(broker string, clients int, rate float64, dur time.Duration, subs int) loadResult {
	cfg := mqtt.Defaults()
	cfg.Broker, cfg.Clients, cfg.ConnRate = broker, clients, 1000
	cfg.PubInterval = time.Duration(float64(clients) / rate * float64(time.Second))
	cfg.Duration, cfg.Subscribers, cfg.QoS, cfg.Size = dur, subs, benchQoS, 200
	cfg.Grace = 10 * time.Second
	if benchWorkers > 0 {
		cfg.Workers = benchWorkers
	}
	cfg.Procs = benchProcs
	res, err := mqtt.Run(context.Background(), cfg)
	out := loadResult{Clients: clients, Rate: rate}
	if err != nil {
		out.Err = err.Error()
	}
	if res != nil {
		m := res.Messages
		out.Published, out.Received, out.Lost, out.Unacked = m.Published, m.Received, m.Lost, m.Unacked
		out.ConnectsOK, out.Failed, out.FailedBy = res.Connects.OK, res.Connects.Failed, res.Connects.FailedBy
		out.AckP99, out.E2EP99, out.Overruns = res.Latency.Ack.P99, res.Latency.E2E.P99, m.Overruns
	}
	return out
}

// child runs this program again with args and decodes its JSON answer;
// it returns the child's CPU time too.
func child(v any, args ...string) (time.Duration, error) {
	c, err := childCPU(v, nil, args...)
	return c.user + c.sys, err
}

// childCPU is child run under the command prefix pre (e.g. taskset -c
// 0, which execs it: same process, same rusage); it returns the child's
// user and system time.
func childCPU(v any, pre []string, args ...string) (cpuTime, error) {
	argv := append(append(append([]string(nil), pre...), os.Args[0]), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return cpuTime{}, fmt.Errorf("%v: %v", args, err)
	}
	return cpuTime{cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()}, json.Unmarshal(out, v)
}

func main() {
	broker := flag.String("broker", "tcp://127.0.0.1:18831", "mosquitto to measure against")
	brokerPID := flag.Int("broker-pid", 0, "the broker's pid, for its CPU (default: from the scripts/mosquitto.sh pidfile)")
	mode := flag.String("mode", "all", "all | hold | load (hold/load are the child modes)")
	client := flag.String("client", "lean", "hold: lean or paho")
	n := flag.Int("n", 1000, "hold: connections; load: clients")
	rate := flag.Float64("rate", 5000, "load: msg/s")
	dur := flag.Duration("duration", 10*time.Second, "load: steady window per step")
	subs := flag.Int("subscribers", 2, "load: subscribers (shared subscription when > 1)")
	n1 := flag.Int("hold-small", 1000, "all: smaller connection count for the per-connection slope")
	n2 := flag.Int("hold-large", 6000, "all: larger connection count for the per-connection slope")
	rates := flag.String("rates", "2000,5000,10000,15000,20000,30000", "all: rate sweep, msg/s")
	sweepClients := flag.Int("sweep-clients", 2000, "all: clients in the rate sweep")
	marginal := flag.Float64("marginal-rate", 10000, "all: rate for the marginal CPU-per-message measurement (0 = skip)")
	big := flag.Int("hold-target", 15000, "all: connections the probe must hold")
	flag.IntVar(&benchQoS, "qos", 1, "load and marginal: QoS of the publishes, 1 or 2 (QoS 2 publishers are read as acks arrive: PUBREL goes out at once)")
	flag.IntVar(&benchProcs, "procs", 0, "load: the probe's Config.Procs (0 auto, -1 leave GOMAXPROCS)")
	flag.IntVar(&benchWorkers, "workers", 0, "load: probe scheduler workers (0 = the probe's default)")
	cpuprofile := flag.String("cpuprofile", "", "load/hold: write a CPU profile here")
	rounds := flag.Int("rounds", 3, "marginal: rounds of the unpinned and pinned measurement; the median ratios are printed")
	only := flag.String("only", "", "all: run only this section: marginal (the marginal CPU per message; skips idle cost, sweep and hold)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}

	switch *mode {
	case "hold":
		_ = json.NewEncoder(os.Stdout).Encode(hold(*broker, *client, *n))
		return
	case "load":
		_ = json.NewEncoder(os.Stdout).Encode(load(*broker, *n, *rate, *dur, *subs))
		return
	}
	if *brokerPID == 0 {
		if b, err := os.ReadFile("/tmp/hostprep-mosquitto-18831/mosquitto.pid"); err == nil {
			*brokerPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	fmt.Printf("MQTT probe benchmark against %s (broker pid %d), %s, %s\n\n", *broker, *brokerPID, plural.N(runtime.NumCPU(), "CPU"), runtime.Version())
	switch *only {
	case "":
	case "marginal":
		if *marginal <= 0 {
			*marginal = 10000
		}
		marginalCPU(*broker, *brokerPID, *marginal, *sweepClients, *subs, max(*rounds, 1))
		return
	default:
		fmt.Fprintf(os.Stderr, "-only %q: want marginal\n", *only)
		os.Exit(2)
	}

	idleCost(*broker, *n1, *n2)
	rateSweep(*broker, *brokerPID, *rates, *sweepClients, *subs, *dur)
	if *marginal > 0 {
		marginalCPU(*broker, *brokerPID, *marginal, *sweepClients, *subs, max(*rounds, 1))
	}

	holdTarget(*broker, *big)
}

// idleCost prints RSS and goroutines per idle connection: the slope
// between n1 and n2 connections held by a fresh child each, after GC.
func idleCost(broker string, n1, n2 int) {
	// 1. Per idle connection: RSS and goroutines.
	fmt.Println("== idle connection cost (slope between", n1, "and", n2, "connections, fresh process each, after GC)")
	fmt.Printf("%-22s %12s %14s %10s\n", "client", "RSS KiB/conn", "goroutines/conn", "connected")
	for _, c := range []string{"lean", "paho"} {
		var a, b holdResult
		if _, err := child(&a, "-mode", "hold", "-broker", broker, "-client", c, "-n", strconv.Itoa(n1)); err != nil {
			fmt.Println(c, err)
			continue
		}
		if _, err := child(&b, "-mode", "hold", "-broker", broker, "-client", c, "-n", strconv.Itoa(n2)); err != nil {
			fmt.Println(c, err)
			continue
		}
		dn := float64(b.N - a.N)
		name := map[string]string{"lean": "hostprep (mochi codec)", "paho": "paho.mqtt.golang"}[c]
		fmt.Printf("%-22s %12.1f %14.2f %10d\n", name, float64(b.RSSKiB-a.RSSKiB)/dn, float64(b.Goroutines-a.Goroutines)/dn, b.Connected)
	}
}

// rateSweep steps through rates (messages/s, comma-separated) with
// sweepClients clients and subs subscribers for dur each, printing CPU per
// message (probe and broker) until a step loses a message.
func rateSweep(broker string, brokerPID int, rates string, sweepClients, subs int, dur time.Duration) {
	// 2 + 3. Rate sweep: CPU per message and the highest zero-loss rate.
	fmt.Printf("\n== rate sweep: %s, QoS 1, 200 B, %v per step, %s\n", plural.N(sweepClients, "client"), dur, plural.N(subs, "subscriber"))
	fmt.Printf("%9s %10s %10s %6s %8s %9s %9s %14s %14s %9s\n", "msg/s", "published", "received", "lost", "unacked", "ack p99", "e2e p99", "probe µs/msg", "broker µs/msg", "overruns")
	best := 0.0
	for _, s := range strings.Split(rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			continue
		}
		b0 := procCPU(brokerPID)
		var lr loadResult
		cpu, err := child(&lr, "-mode", "load", "-broker", broker, "-n", strconv.Itoa(sweepClients), "-rate", s, "-duration", dur.String(), "-subscribers", strconv.Itoa(subs))
		bc := procCPU(brokerPID).sub(b0)
		if err != nil {
			fmt.Println(r, err)
			break
		}
		msgs := float64(lr.Published)
		probeUS, brokerUS := 0.0, 0.0
		if msgs > 0 {
			probeUS = float64(cpu.Microseconds()) / msgs
			brokerUS = float64((bc.user + bc.sys).Microseconds()) / msgs
		}
		fmt.Printf("%9.0f %10d %10d %6d %8d %8.1fms %8.1fms %14.1f %14.1f %9d %s\n", r, lr.Published, lr.Received, lr.Lost, lr.Unacked, lr.AckP99, lr.E2EP99, probeUS, brokerUS, lr.Overruns, lr.Err)
		if lr.Lost == 0 && lr.Unacked == 0 && lr.Err == "" && lr.Published > 0 {
			best = r
		} else {
			break
		}
	}
	fmt.Printf("highest rate with zero loss: %.0f msg/s\n", best)
}

// holdTarget checks the probe holds big connections (1000 conn/s, one
// message per 10 s each, 10 s window).
func holdTarget(broker string, big int) {
	// 4. Hold the target number of connections.
	fmt.Printf("\n== holding %s (1000 conn/s, 1 msg/10 s each, 10 s window)\n", plural.N(big, "connection"))
	var lr loadResult
	if _, err := child(&lr, "-mode", "load", "-broker", broker, "-n", strconv.Itoa(big), "-rate", strconv.Itoa(big/10), "-duration", "10s", "-subscribers", "1"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("connects ok %d, failed %d %v, published %d, received %d, lost %d %s\n", lr.ConnectsOK, lr.Failed, lr.FailedBy, lr.Published, lr.Received, lr.Lost, lr.Err)
}

// cpuTime is user and system CPU time of a process.
type cpuTime struct{ user, sys time.Duration }

func (a cpuTime) sub(b cpuTime) cpuTime { return cpuTime{a.user - b.user, a.sys - b.sys} }

// procCPU is utime and stime of pid from /proc/PID/stat (clock ticks of
// USER_HZ, 100/s, so 10 ms resolution).
func procCPU(pid int) cpuTime {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTime{}
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return cpuTime{time.Duration(u) * 10 * time.Millisecond, time.Duration(st) * 10 * time.Millisecond}
}

// pinBroker pins pid (the broker) to cpu and returns a function that
// restores its affinity; it reports an error when pid cannot be pinned.
func pinBroker(pid, cpu int) (func(), error) {
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &old); err != nil {
		return nil, err
	}
	set.Set(cpu)
	// Every thread of the broker (mosquitto has one, but be exact).
	tids, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tids {
		tid, _ := strconv.Atoi(t.Name())
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return nil, err
		}
	}
	return func() {
		for _, t := range tids {
			tid, _ := strconv.Atoi(t.Name())
			_ = unix.SchedSetaffinity(tid, &old)
		}
	}, nil
}

// marginalCPU prints the CPU per message of probe and broker at rate as
// the difference between a short and a long window at the same rate,
// which cancels the fixed costs (process start, connect ramp,
// calibration) that the per-step figures of the sweep include. It
// measures twice: unpinned, then with the probe on CPU 0 and the broker
// on CPU 1 (taskset), and prints user and system time separately.
func marginalCPU(broker string, brokerPID int, rate float64, clients, subs, rounds int) {
	fmt.Printf("marginal CPU per message at %.0f msg/s, %s, QoS %d, 200 B (20 s minus 5 s window), µs, %s alternating unpinned and pinned:\n",
		rate, plural.N(clients, "client"), benchQoS, plural.N(rounds, "round"))
	fmt.Printf("%-9s %-7s %7s %7s %7s\n", "variant", "who", "user", "system", "total")
	// ratios[variant] holds each round's user, system and total ratio.
	ratios := map[string][][3]float64{}
	for r := 0; r < rounds; r++ {
		for _, pinned := range []bool{false, true} {
			variant := "unpinned"
			if pinned {
				variant = "pinned"
			}
			probe, brk, ok := marginalOnce(broker, brokerPID, rate, clients, subs, pinned)
			if !ok {
				continue
			}
			ratio := [3]float64{probe[0] / brk[0], probe[1] / brk[1], (probe[0] + probe[1]) / (brk[0] + brk[1])}
			ratios[variant] = append(ratios[variant], ratio)
			fmt.Printf("%-9s %-7s %7.1f %7.1f %7.1f\n", variant, "probe", probe[0], probe[1], probe[0]+probe[1])
			fmt.Printf("%-9s %-7s %7.1f %7.1f %7.1f\n", variant, "broker", brk[0], brk[1], brk[0]+brk[1])
			fmt.Printf("%-9s %-7s %7.2f %7.2f %7.2f   (probe / broker)\n", variant, "ratio", ratio[0], ratio[1], ratio[2])
		}
	}
	if rounds > 1 {
		for _, variant := range []string{"unpinned", "pinned"} {
			rs := ratios[variant]
			if len(rs) == 0 {
				continue
			}
			var med [3]float64
			for k := range med {
				col := make([]float64, len(rs))
				for i, r := range rs {
					col[i] = r[k]
				}
				med[k] = median(col)
			}
			fmt.Printf("%-9s %-7s %7.2f %7.2f %7.2f   (median probe / broker over %s)\n", variant, "median", med[0], med[1], med[2], plural.N(len(rs), "round"))
		}
	}
}

// median of xs (sorted in place).
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// marginalOnce runs the 5 s and 20 s windows and returns user and system
// µs per message of probe and broker.
func marginalOnce(broker string, brokerPID int, rate float64, clients, subs int, pinned bool) (probe, brk [2]float64, ok bool) {
	var pts [2]struct {
		probe, broker cpuTime
		msgs          int64
	}
	var pre []string
	if pinned {
		restore, err := pinBroker(brokerPID, 1)
		if err != nil {
			fmt.Println("pinned: cannot pin the broker:", err)
			return probe, brk, false
		}
		defer restore()
		pre = []string{"taskset", "-c", "0"}
	}
	for i, d := range []string{"5s", "20s"} {
		b0 := procCPU(brokerPID)
		var lr loadResult
		pc, err := childCPU(&lr, pre, "-mode", "load", "-broker", broker, "-n", strconv.Itoa(clients), "-rate", strconv.FormatFloat(rate, 'f', 0, 64), "-duration", d, "-subscribers", strconv.Itoa(subs), "-procs", strconv.Itoa(benchProcs), "-qos", strconv.Itoa(benchQoS))
		if err != nil {
			fmt.Println(err)
			return probe, brk, false
		}
		if lr.Lost != 0 || lr.Unacked != 0 || lr.Err != "" {
			fmt.Printf("warning: %s window lost %d, unacked %d %s\n", d, lr.Lost, lr.Unacked, lr.Err)
		}
		pts[i].probe, pts[i].broker, pts[i].msgs = pc, procCPU(brokerPID).sub(b0), lr.Published
	}
	dm := float64(pts[1].msgs - pts[0].msgs)
	p, b := pts[1].probe.sub(pts[0].probe), pts[1].broker.sub(pts[0].broker)
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / dm }
	return [2]float64{us(p.user), us(p.sys)}, [2]float64{us(b.user), us(b.sys)}, true
}
