// Command iotdbping opens one real IoTDB client session (Go client v1.3.7,
// the same library hostprep's probe uses), runs `show version` and prints
// the server version. scripts/iotdb.sh uses it to decide that a freshly
// started IoTDB is ready: an open TCP port is not enough, the DataNode must
// also accept a session and answer a statement.
//
// Exit status 0 when the session opened and the statement answered, 1
// otherwise (the reason on stderr). The password comes from
// HOSTPREP_IOTDB_PASSWORD (default "root") and is never printed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hostprep/hostprep/loadprobe/iotdb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6667", "host:port of the IoTDB DataNode client RPC")
	user := flag.String("user", "root", "IoTDB user")
	timeout := flag.Duration("timeout", 10*time.Second, "bound on connect + statement")
	flag.Parse()
	pw := os.Getenv("HOSTPREP_IOTDB_PASSWORD")
	if pw == "" {
		pw = "root"
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	v, err := iotdb.Ping(ctx, *addr, *user, pw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "iotdbping %s: %v\n", *addr, err)
		os.Exit(1)
	}
	fmt.Println(v)
}
