package natsstore

import (
	"os"
	"testing"

	"looprig/rig/rigtest"
	"looprig/rig/storage"
)

// natsBackend runs the runtime suite on an embedded server per test. The
// store's "dir" is the server's URL: helper processes of the crash tests
// connect to the server that lives in this (parent) test process.
func natsBackend() rigtest.Backend {
	return rigtest.Backend{
		Name: "natsstore",
		NewStore: func(t testing.TB) (storage.Store, string) {
			url := startServer(t).URL()
			return openStore(t, url), url
		},
		Reopen:       func(t testing.TB, url string) storage.Store { return openStore(t, url) },
		CrossProcess: true,
	}
}

func TestMain(m *testing.M) {
	serverHelperMain()
	rigtest.HelperMain(natsBackend())
	os.Exit(m.Run())
}

func TestRuntime(t *testing.T) { rigtest.Run(t, natsBackend()) }

func BenchmarkRestore(b *testing.B) { rigtest.BenchmarkRestore(b, natsBackend()) }
