package procnet

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestListeningTCPPorts(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "net"), 0o755)
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:075B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:9C40 0100007F:075B 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:075B 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
`
	os.WriteFile(filepath.Join(dir, "net", "tcp"), []byte(tcp), 0o644)
	os.WriteFile(filepath.Join(dir, "net", "tcp6"), []byte(tcp6), 0o644)
	got, err := ListeningTCPPorts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{22, 1883}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v (established 40000 excluded, 1883 once)", got, want)
	}
	// The live /proc parses too.
	if _, err := ListeningTCPPorts(""); err != nil {
		t.Fatal(err)
	}
}
