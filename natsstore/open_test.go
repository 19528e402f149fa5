package natsstore

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"looprig/natsstore/embedded"
	"looprig/rig/storage"
)

func TestEncodeName(t *testing.T) {
	names := []string{"a", "a/b", "a.b", "a.", "a./b", "a.b/c", "a-b_c.d/e.f", "sessions/0f3c/catalog", "x.lock/y.epoch"}
	seen := map[string]string{}
	for _, n := range names {
		if err := storage.ValidateName(n); err != nil {
			t.Fatalf("test bug: %v", err)
		}
		enc := encodeName(n)
		if strings.ContainsAny(enc, "/*> ") || strings.HasPrefix(enc, ".") || strings.HasSuffix(enc, ".") || strings.Contains(enc, "..") {
			t.Errorf("encodeName(%q) = %q is not a valid subject suffix and KV key", n, enc)
		}
		if back := decodeName(enc); back != n {
			t.Errorf("decodeName(encodeName(%q)) = %q", n, back)
		}
		if other, dup := seen[enc]; dup {
			t.Errorf("%q and %q both encode to %q", n, other, enc)
		}
		seen[enc] = n
	}
	for _, c := range []struct {
		prefix, filter string
		ok             bool
	}{
		{"", ">", true},
		{"sess", ">", true},
		{"sessions/", "sessions.>", true},
		{"sessions/ab", "sessions.>", true},
		{"a.b/c/d", "a=b.c.>", true},
		{"Sessions/", "", false},
		{"sessions//", "", false},
		{"/x", "", false},
	} {
		f, ok := keysFilter(c.prefix)
		if f != c.filter || ok != c.ok {
			t.Errorf("keysFilter(%q) = %q, %v; want %q, %v", c.prefix, f, ok, c.filter, c.ok)
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, servers, redacted, prefix string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222", "nats://127.0.0.1:4222", ""},
		{"nats://h:1/team-a", "nats://h:1", "nats://h:1/team-a", "team-a"},
		{"tls://a:1,b:2/p", "tls://a:1,tls://b:2", "tls://a:1,b:2/p", "p"},
	} {
		servers, redacted, prefix, err := parseURL(c.in)
		if err != nil || servers != c.servers || redacted != c.redacted || prefix != c.prefix {
			t.Errorf("parseURL(%q) = %q %q %q %v; want %q %q %q", c.in, servers, redacted, prefix, err, c.servers, c.redacted, c.prefix)
		}
	}
	for _, bad := range []string{"http://h:1", "nats://user:secret@h:1", "nats://tok@h:1", "nats://", "nats://h:1/a/b", "nats://h:1/?x=1", "/tmp/store"} {
		_, _, _, err := parseURL(bad)
		if err == nil {
			t.Errorf("parseURL(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("parseURL(%q) error shows the password: %v", bad, err)
		}
	}
}

func wantUnavailable(t *testing.T, err error, reason string) {
	t.Helper()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, reason) {
		t.Fatalf("Open = %v, want *UnavailableError saying %q", err, reason)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = Open(ctx, "nats://"+addr, WithoutEnvCredentials())
		wantUnavailable(t, err, "cannot reach")
	})
	t.Run("no-jetstream", func(t *testing.T) {
		srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		defer srv.Shutdown()
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatal("server not ready")
		}
		_, err = Open(ctx, srv.ClientURL(), WithoutEnvCredentials())
		wantUnavailable(t, err, "JetStream is not enabled")
	})
	t.Run("small-max-payload", func(t *testing.T) {
		srv := startServer(t, embedded.MaxPayload(1<<20))
		_, err := Open(ctx, srv.URL(), WithoutEnvCredentials())
		wantUnavailable(t, err, "max_payload")
	})
	t.Run("token", func(t *testing.T) {
		srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			MaxPayload: 8 << 20, JetStream: true, StoreDir: t.TempDir(), Authorization: "s3cret"})
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		defer srv.Shutdown()
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatal("server not ready")
		}
		t.Setenv("NATS_CREDS", "")
		t.Setenv("NATS_TOKEN", "")
		_, err = Open(ctx, srv.ClientURL())
		wantUnavailable(t, err, "refused our credentials")
		t.Setenv("NATS_TOKEN", "s3cret")
		s, err := Open(ctx, srv.ClientURL())
		if err != nil {
			t.Fatalf("Open with $NATS_TOKEN = %v", err)
		}
		defer s.Close()
		if strings.Contains(s.URL(), "s3cret") {
			t.Errorf("URL() shows the token: %s", s.URL())
		}
	})
	t.Run("presence-denied", func(t *testing.T) {
		srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			MaxPayload: 8 << 20, JetStream: true, StoreDir: t.TempDir(),
			Users: []*server.User{{Username: "u", Password: "p", Permissions: &server.Permissions{
				Subscribe: &server.SubjectPermission{Deny: []string{"looprig.presence.>"}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		defer srv.Shutdown()
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatal("server not ready")
		}
		_, err = Open(ctx, srv.ClientURL(), WithoutEnvCredentials(), WithTimeout(2*time.Second), WithNATSOptions(nats.UserInfo("u", "p")))
		wantUnavailable(t, err, "presence")
	})
	t.Run("incompatible-stream", func(t *testing.T) {
		srv := startServer(t)
		s := openStore(t, srv.URL())
		// Someone put a message age limit on the ledger stream.
		info := s.ledgers.CachedInfo().Config
		info.MaxAge = time.Hour
		if _, err := s.js.UpdateStream(ctx, info); err != nil {
			t.Fatal(err)
		}
		_, err := Open(ctx, srv.URL(), WithoutEnvCredentials())
		wantUnavailable(t, err, "configuration natsstore cannot use")
	})
}

// Keys lists only keys under the prefix, sorted, however many there are.
func TestKeysMany(t *testing.T) {
	s := openStore(t, startServer(t).URL())
	ctx := t.Context()
	var want []string
	for i := range 300 {
		k := "sessions/" + strings.Repeat("k", 1+i%7) + "/" + string(rune('a'+i%26)) + "/catalog"
		if i%3 == 0 {
			k = "other/" + k
		}
		if _, err := s.Put(ctx, k, []byte("v"), storage.AnyRevision); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(k, "sessions/kk") {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	got, err := s.Keys(ctx, "sessions/kk")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Keys = %d keys, %v; want %d", len(got), err, len(want))
	}
}
