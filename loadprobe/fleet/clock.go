package fleet

import (
	"fmt"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"golang.org/x/sys/unix"
)

// DefaultMaxClockError is the bound --max-clock-error defaults to: this
// host's clock within 50 ms of true time by the kernel's own worst-case
// estimate, so two shards' schedules start within 100 ms of each other.
const DefaultMaxClockError = 50 * time.Millisecond

// Clock is the kernel's view of this host's clock (adjtimex(2)).
type Clock struct {
	// Synchronised is false when adjtimex returns TIME_ERROR: no time
	// daemon (chrony, ntpd, systemd-timesyncd) has disciplined the clock,
	// or it lost sync.
	Synchronised bool `json:"synchronised"`
	// MaxErrorMs is the kernel's maximum error of the clock (adjtimex
	// maxerror, µs, shown in ms): a bound on its offset from true time,
	// set by the time daemon and growing by 0.5 ms each second without
	// an update (16 s when unsynchronised).
	MaxErrorMs float64 `json:"max_error_ms"`
	// EstErrorMs is the estimated error (adjtimex esterror).
	EstErrorMs float64 `json:"est_error_ms"`
}

// ReadClock asks the kernel (adjtimex with no change requested).
func ReadClock() (Clock, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return Clock{}, fmt.Errorf("adjtimex: %w", err)
	}
	return Clock{Synchronised: state != unix.TIME_ERROR, MaxErrorMs: float64(tx.Maxerror) / 1000, EstErrorMs: float64(tx.Esterror) / 1000}, nil
}

// CheckClock refuses a common start (--start-at) on a clock that cannot
// keep it: unsynchronised, or a maximum error above bound. bound <= 0
// means not checked (every shard on one host shares one clock). The error
// is exitcode.Environment naming the measurement, the bound and the fix.
func CheckClock(c Clock, bound time.Duration) error {
	if bound <= 0 {
		return nil
	}
	limit := float64(bound) / 1e6
	if !c.Synchronised {
		return exitcode.Environmentf("--start-at needs a synchronised clock: adjtimex says this clock is not synchronised (maxerror %.0f ms), so its offset from the other shards is unknown and above the --max-clock-error %v bound; start chrony or systemd-timesyncd and wait for sync, or pass --max-clock-error 0 when every shard runs on this host (one clock)", c.MaxErrorMs, bound)
	}
	if c.MaxErrorMs > limit {
		return exitcode.Environmentf("--start-at: this clock's maximum error is %.1f ms (adjtimex maxerror), above the --max-clock-error %v bound; wait for the time daemon to converge, use a closer time source, or raise --max-clock-error", c.MaxErrorMs, bound)
	}
	return nil
}
