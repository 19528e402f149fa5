// Package embedded runs an in-process nats-server with JetStream storing in
// one directory: for tests, and for a local single-node store that other
// looprig processes on the machine reach by its URL.
//
// It is a package of its own so that importing natsstore, which only
// connects to a server by URL, does not link the whole server into a
// binary: the looprig command does not import this package.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an in-process nats-server with JetStream storing in one
// directory.
//
// It runs JetStream with sync_interval: always (every acknowledged write is
// fsynced before the ack) and max_payload 8 MiB. It has no authentication:
// keep it on loopback (the default) unless the network is trusted.
type Server struct {
	mu         sync.Mutex
	dir        string
	host       string
	port       int
	maxPayload int32
	srv        *server.Server
}

// Option configures Start.
type Option func(*Server)

// Listen sets the listen address (default 127.0.0.1 and a random free
// port; port 0 or -1 picks one).
func Listen(host string, port int) Option {
	return func(e *Server) { e.host, e.port = host, port }
}

// MaxPayload sets the server's max_payload (default 8 MiB).
func MaxPayload(n int) Option {
	return func(e *Server) { e.maxPayload = int32(n) }
}

// Start starts a server storing in dir (created 0700 if needed) and waits
// until it accepts connections.
func Start(dir string, opts ...Option) (*Server, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("natsstore: embedded server: %w", err)
	}
	e := &Server{dir: abs, host: "127.0.0.1", port: -1, maxPayload: 8 << 20}
	for _, o := range opts {
		o(e)
	}
	if e.port == 0 {
		e.port = -1
	}
	if err := e.start(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Server) start() error {
	o := &server.Options{
		ServerName: "looprig-embedded",
		Host:       e.host,
		Port:       e.port,
		JetStream:  true,
		StoreDir:   e.dir,
		SyncAlways: true, // sync_interval: always
		MaxPayload: e.maxPayload,
		NoSigs:     true,
		NoLog:      true,
	}
	srv, err := server.NewServer(o)
	if err != nil {
		return fmt.Errorf("natsstore: embedded server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return errors.New("natsstore: embedded server did not become ready")
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		return errors.New("natsstore: embedded server started without JetStream")
	}
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		e.port = addr.Port
	}
	e.srv = srv
	return nil
}

// URL is the nats:// URL of the server.
func (e *Server) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return "nats://" + net.JoinHostPort(e.host, strconv.Itoa(e.port))
}

// Shutdown stops the server and waits for it; safe to call twice.
func (e *Server) Shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		return
	}
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.srv = nil
}

// Restart stops the server (if running) and starts it again on the same
// directory and port, as a server crash and restart would.
func (e *Server) Restart() error {
	e.Shutdown()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.start()
}
