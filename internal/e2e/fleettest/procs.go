package fleettest

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// BuildWorker compiles cmd/worker into dir and returns the binary's path,
// for tests and benchmarks that run workers as processes (to kill them, or
// to measure their CPU).
func BuildWorker(dir string) (string, error) {
	bin := filepath.Join(dir, "worker")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/extractq/extractq/cmd/worker").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cmd/worker: %v\n%s", err, out)
	}
	return bin, nil
}

// StartNATS starts an embedded NATS server with JetStream storing in dir
// on a free loopback port; stop shuts it down.
func StartNATS(dir string) (url string, stop func(), err error) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return "", nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return "", nil, errors.New("embedded nats-server did not start within 10s")
	}
	return s.ClientURL(), s.Shutdown, nil
}
