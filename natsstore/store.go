// Package natsstore is the NATS JetStream backend of looprig's storage
// contracts (rig/storage): the same leases, ledgers and catalog as fsstore,
// and blobs (storage.BlobStore), shared by every machine that reaches one
// NATS server or cluster. It passes storetest and the runtime suite
// (rigtest) unchanged.
//
// Layout, for a prefix P (default "looprig", or the URL's path):
//
//	stream  P-ledgers        subjects P.ledger.<name>: every ledger, a subject each
//	bucket  P-catalog        KV: the catalog (storage.KV)
//	bucket  P-leases         KV: one lease record per name
//	bucket  P-blobs          Object Store (stream OBJ_P-blobs): one object per
//	                         blob, named by its SHA-256 in hex (storage.BlobStore)
//	subject P.presence.<id>  each open Store answers here for its leases
//
// Names map to subject tokens and KV keys with '/' → '.' and '.' → '='
// (see encodeName).
//
// Ledgers. One stream holds every ledger, a subject per ledger, so the
// number of streams does not grow with sessions (each stream is a set of
// files, goroutines and, in a cluster, a Raft group; accounts often cap
// streams). One Append is one message holding all its payloads, so a
// multi-payload Append is atomic without any server support: a message
// lands whole or not at all. The message's headers say which ledger
// sequences it holds (Looprig-First, Looprig-Count), so ledger sequences
// are 1-based and contiguous per ledger while stream sequences are shared
// by all ledgers. The compare-and-swap is Nats-Expected-Last-Subject-Sequence
// on the stream sequence of the ledger's last message, which stands for its
// tip exactly. An Append too large for one message (the server's
// max_payload) is split into several messages published as one atomic batch
// (Nats-Batch-*, nats-server 2.12+), so all-or-nothing still holds. Reads
// go through the stream leader (no direct gets), so a read sees every
// acknowledged append.
//
// Leases are KV records {epoch, state, holder, expires, owner}: created or
// taken over by revision compare-and-swap, renewed every third of the TTL,
// self-fenced when a renewal cannot be confirmed before the last written
// expiry, released by writing state "expired" with the epoch kept; a
// holder whose connection is gone is detected at once through presence.
// See lease.go. Expiries are wall-clock times written by the holder:
// machines sharing a store need clocks within WithClockSkew (default 1s)
// of each other, e.g. NTP.
//
// Blobs are Object Store objects under their digest. A put streams the
// content under a temporary name while hashing it, then writes the meta
// message of the digest's name by compare-and-swap, pointing at those
// chunks (or republishes the meta already there, which renews its time).
// A crash leaves only a temporary object or unreferenced chunks, never a
// digest name over other content. See blobs.go.
//
// Running a server for it. Every machine reaches one server (or cluster):
//
//	# nats.conf
//	listen: 0.0.0.0:4222
//	max_payload: 8MB              # natsstore needs ≥ 1 MiB + 64 KiB
//	jetstream {
//	  store_dir: /var/lib/nats
//	  sync_interval: always       # fsync before every acknowledgement
//	}
//	authorization { token: $NATS_TOKEN }   # or accounts / nkeys / creds
//
// then looprig --store nats://host:4222 (NATS_TOKEN or NATS_CREDS in the
// environment). sync_interval: always is what makes an acknowledged append
// survive a server crash or power loss; the client cannot check it. On a
// cluster, WithReplicas(3) makes an acknowledgement mean a quorum holds
// the write. natsstore/embedded (embedded.Start) runs such a server
// in-process (tests, a local single-node store) without linking it into
// this package.
package natsstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"looprig/rig/storage"
)

// DefaultPrefix names the stream, buckets and subjects when the URL has no
// path and WithPrefix is not given.
const DefaultPrefix = "looprig"

// MinMaxPayload is the smallest server max_payload natsstore accepts: a
// storage.MaxPayload record plus its headers and framing.
const MinMaxPayload = storage.MaxPayload + 64<<10

// Default timings.
const (
	DefaultLeaseTTL  = 10 * time.Second
	DefaultClockSkew = time.Second
	DefaultTimeout   = 10 * time.Second
)

// UnavailableError says the store cannot be used: the server is
// unreachable, refuses us, lacks JetStream or is too old or too small.
type UnavailableError struct {
	URL    string // redacted: never holds credentials
	Reason string
	Fix    string
	Err    error
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("NATS store %s: %s", e.URL, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Option configures Open.
type Option func(*options)

type options struct {
	prefix    string
	leaseTTL  time.Duration
	skew      time.Duration
	timeout   time.Duration
	pid       int
	host      string
	presence  bool
	replicas  int
	natsOpts  []nats.Option
	envCreds  bool
	connName  string
	pingEvery time.Duration
}

// WithPrefix names the stream, buckets and subjects (letters, digits, '-'
// and '_'); it overrides the URL's path.
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithLeaseTTL sets how long a lease record stays valid without renewal
// (default 10s). Holders renew every third of it.
func WithLeaseTTL(d time.Duration) Option { return func(o *options) { o.leaseTTL = d } }

// WithClockSkew sets how far apart the clocks of two machines sharing the
// store may be (default 1s): a record is taken as expired only that long
// after the expiry its holder wrote.
func WithClockSkew(d time.Duration) Option { return func(o *options) { o.skew = d } }

// WithTimeout bounds each request to the server (default 10s); Appends
// with a context that has no deadline (the journal's) are bounded by it.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithHolder overrides the pid and host written into lease records.
func WithHolder(pid int, host string) Option {
	return func(o *options) { o.pid, o.host = pid, host }
}

// WithoutPresence turns off holder presence: a lease record then counts as
// held until its expiry even when its holder's connection is gone, and
// holders keep their leases across short disconnects. See lease.go.
func WithoutPresence() Option { return func(o *options) { o.presence = false } }

// WithReplicas sets the replica count of the stream and buckets Open
// creates (default 1; use 3 on a cluster).
func WithReplicas(n int) Option { return func(o *options) { o.replicas = n } }

// WithNATSOptions adds nats.Connect options (TLS, nkeys, ...). They come
// after natsstore's own, so they may override them.
func WithNATSOptions(opts ...nats.Option) Option {
	return func(o *options) { o.natsOpts = append(o.natsOpts, opts...) }
}

// WithoutEnvCredentials stops Open from reading NATS_CREDS and NATS_TOKEN.
func WithoutEnvCredentials() Option { return func(o *options) { o.envCreds = false } }

// Store is an open NATS store. It implements storage.Store (leases with
// probes, ProbeMany for listings, and breaks; ledgers; the catalog KV) and
// storage.BlobStore (blobs.go). It
// is safe for concurrent use; many Stores (in many processes, on many
// machines) may share one server and prefix.
type Store struct {
	url    string // redacted
	prefix string
	o      options
	nc     *nats.Conn
	js     jetstream.JetStream

	ledgers jetstream.Stream
	catalog jetstream.KeyValue
	leaseKV jetstream.KeyValue

	blobs      jetstream.ObjectStore // see blobs.go
	blobStream jetstream.Stream      // the object store's stream, OBJ_P-blobs
	blobBucket string                // "P-blobs"

	ledgerStream string // stream name
	ledgerSubj   string // "P.ledger."
	id           string // presence id of this Store
	presenceSubj string // "P.presence."
	presenceSub  *nats.Subscription

	maxMsg int // largest message we publish, from the server's max_payload

	asyncErr atomic.Pointer[error] // the latest asynchronous error of the connection
	stamps   atomic.Uint64         // see ChangeStamp

	mu     sync.Mutex
	tips   map[string]tipCache // last message seen per ledger
	held   map[string][]*lease // leases granted (or being granted) by this Store, per name
	hooks  testHooks           // test-only behaviour
	closed bool
	bg     sync.WaitGroup // background cleanups
}

var _ storage.Store = (*Store)(nil)

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Open connects to the NATS server at rawURL (nats://host:port[/prefix],
// also tls://; several servers separated by commas) and prepares the
// stream and buckets, creating them on first use.
//
// Credentials never come from the URL: a URL with a user or password is
// refused. Open reads a credentials file from $NATS_CREDS or a token from
// $NATS_TOKEN (unless WithoutEnvCredentials); other methods go through
// WithNATSOptions.
//
// An unreachable server, one without JetStream, one older than 2.12 or one
// whose max_payload is below MinMaxPayload gives *UnavailableError.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	o, servers, redacted, err := openOptions(rawURL, opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	s := &Store{
		url: redacted, prefix: o.prefix, o: o,
		ledgerStream: o.prefix + "-ledgers",
		ledgerSubj:   o.prefix + ".ledger.",
		presenceSubj: o.prefix + ".presence.",
		id:           nuid.Next(),
		tips:         map[string]tipCache{},
		held:         map[string][]*lease{},
	}
	nc, err := s.connect(servers)
	if err != nil {
		return nil, err
	}
	s.nc = nc
	if err := s.prepare(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}

// openOptions is Open's options: the defaults, the URL's prefix, then
// opts, checked; and the URL's servers and its redacted form.
func openOptions(rawURL string, opts []Option) (o options, servers, redacted string, err error) {
	o = options{
		leaseTTL: DefaultLeaseTTL, skew: DefaultClockSkew, timeout: DefaultTimeout,
		presence: true, replicas: 1, envCreds: true, connName: "looprig",
		pingEvery: 5 * time.Second,
	}
	servers, redacted, pathPrefix, err := parseURL(rawURL)
	if err != nil {
		return o, "", "", err
	}
	o.prefix = pathPrefix
	for _, opt := range opts {
		opt(&o)
	}
	if o.prefix == "" {
		o.prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(o.prefix) {
		return o, "", "", fmt.Errorf("natsstore: prefix %q: use 1 to 32 letters, digits, '-' or '_'", o.prefix)
	}
	if o.leaseTTL < 30*time.Millisecond {
		return o, "", "", fmt.Errorf("natsstore: lease TTL %v is too short", o.leaseTTL)
	}
	if o.pid == 0 {
		o.pid = os.Getpid()
	}
	if o.host == "" {
		o.host, _ = os.Hostname()
	}
	return o, servers, redacted, nil
}

// unavailable is the *UnavailableError of the store's server.
func (s *Store) unavailable(reason, fix string, err error) error {
	return &UnavailableError{URL: s.url, Reason: reason, Fix: fix, Err: err}
}

// connect connects to servers: no buffering while reconnecting, the
// connection's asynchronous errors kept, credentials from the
// environment (unless WithoutEnvCredentials), then the caller's options.
func (s *Store) connect(servers string) (*nats.Conn, error) {
	o := s.o
	nopts := []nats.Option{
		nats.Name(o.connName),
		nats.Timeout(min(o.timeout, 5*time.Second)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// Nothing is buffered while reconnecting: a write either reaches
		// the server now or fails now, never lands late.
		nats.ReconnectBufSize(-1),
		nats.PingInterval(o.pingEvery),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { s.onDisconnect() }),
		// Asynchronous errors (a refused subscription, a slow consumer) are
		// kept, never printed: the TUI owns the terminal.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { s.asyncErr.Store(&err) }),
		nats.ClosedHandler(func(*nats.Conn) { s.onDisconnect() }),
	}
	if o.envCreds {
		if f := os.Getenv("NATS_CREDS"); f != "" {
			nopts = append(nopts, nats.UserCredentials(f))
		} else if tok := os.Getenv("NATS_TOKEN"); tok != "" {
			nopts = append(nopts, nats.Token(tok))
		}
	}
	nopts = append(nopts, o.natsOpts...)
	nc, err := nats.Connect(servers, nopts...)
	if err != nil {
		switch {
		case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
			return nil, s.unavailable("the server refused our credentials", "set NATS_CREDS to a credentials file or NATS_TOKEN to a token", err)
		default:
			return nil, s.unavailable("cannot reach the NATS server", "is nats-server running there, with JetStream (-js)?", err)
		}
	}
	return nc, nil
}

// prepare checks the connected server (its version, its max_payload,
// JetStream), prepares the stream and buckets, and subscribes to the
// presence requests of this Store, making sure it can be asked. The
// caller closes the connection when it fails.
func (s *Store) prepare(ctx context.Context) error {
	nc, o := s.nc, s.o
	if v := nc.ConnectedServerVersion(); !versionAtLeast(v, 2, 12) {
		return s.unavailable("the server runs nats-server "+v+"; natsstore needs 2.12 or newer (atomic batch publish)", "upgrade the server", nil)
	}
	if mp := nc.MaxPayload(); mp < MinMaxPayload {
		return s.unavailable(fmt.Sprintf("the server's max_payload is %d bytes, below the %d a 1 MiB record needs", mp, MinMaxPayload),
			"set max_payload: 8MB in the server configuration", nil)
	}
	s.maxMsg = int(min(nc.MaxPayload(), 64<<20))

	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	s.js = js
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	if _, err := js.AccountInfo(octx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return s.unavailable("JetStream is not enabled on the server", "start nats-server with -js, or enable JetStream for this account", err)
		}
		return s.unavailable("cannot use JetStream on the server", "", err)
	}
	if err := s.setup(octx); err != nil {
		return err
	}
	sub, err := nc.Subscribe(s.presenceSubj+s.id, s.onPresence)
	if err != nil {
		return err
	}
	s.presenceSub = sub
	if err := nc.FlushWithContext(octx); err != nil {
		return s.unavailable("cannot reach the NATS server", "", err)
	}
	// Others judge our leases by our answers: make sure we can be asked.
	// (Were the subscription refused, every other Store would hear "no
	// responders" and take our leases.)
	if o.presence {
		reply, err := nc.RequestWithContext(octx, s.presenceSubj+s.id, []byte("probe 1 -"))
		if ae := s.asyncErr.Load(); ae != nil {
			err = *ae
		}
		if err != nil || string(reply.Data) != "free" {
			return s.unavailable(fmt.Sprintf("cannot answer on %s> (presence)", s.presenceSubj),
				"allow publish and subscribe on "+s.presenceSubj+"> for this user, or use WithoutPresence", err)
		}
	}
	return nil
}

// parseURL splits nats://host:port[/prefix] into the server list for
// nats.Connect, a redacted URL for messages and the prefix.
func parseURL(raw string) (servers, redacted, prefix string, err error) {
	bad := func(why string) error { return fmt.Errorf("natsstore: store URL %q: %s", redactURL(raw), why) }
	u, perr := url.Parse(raw)
	if perr != nil {
		return "", "", "", bad("not a URL")
	}
	switch u.Scheme {
	case "nats", "tls":
	default:
		return "", "", "", bad("want nats://host:port[/prefix] or tls://host:port[/prefix]")
	}
	if u.User != nil {
		return "", "", "", bad("credentials do not go in the URL (command lines are visible to other users); set NATS_CREDS to a credentials file or NATS_TOKEN to a token")
	}
	if u.Host == "" {
		return "", "", "", bad("no host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", bad("no query or fragment is understood")
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" && !prefixRE.MatchString(prefix) {
		return "", "", "", bad("the path names the prefix: 1 to 32 letters, digits, '-' or '_'")
	}
	var list []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return "", "", "", bad("empty server in the list")
		}
		list = append(list, u.Scheme+"://"+h)
	}
	redacted = u.Scheme + "://" + u.Host
	if prefix != "" {
		redacted += "/" + prefix
	}
	return strings.Join(list, ","), redacted, prefix, nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	return u.String()
}

// versionAtLeast reports whether a "major.minor.patch[-x]" version is at
// least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// setup finds or creates the ledger stream, the two KV buckets and the
// blob object store.
func (s *Store) setup(ctx context.Context) error {
	cfg := jetstream.StreamConfig{
		Name:        s.ledgerStream,
		Description: "looprig ledgers: one subject per ledger",
		Subjects:    []string{s.ledgerSubj + ">"},
		Retention:   jetstream.LimitsPolicy,
		// Never drop records: a full stream refuses appends.
		Discard:            jetstream.DiscardNew,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxMsgsPerSubject:  -1,
		MaxMsgSize:         -1,
		Storage:            jetstream.FileStorage,
		Replicas:           s.o.replicas,
		DenyDelete:         true,
		AllowAtomicPublish: true,
		// Reads go to the stream leader, so a read sees every acknowledged
		// append (direct gets may be served by lagging replicas).
		AllowDirect: false,
	}
	st, err := s.js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = s.js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = s.js.Stream(ctx, cfg.Name)
		}
	}
	if err != nil {
		return fmt.Errorf("natsstore: stream %s: %w", cfg.Name, err)
	}
	got := st.CachedInfo().Config
	switch {
	case got.Storage != jetstream.FileStorage, got.Discard != jetstream.DiscardNew,
		got.MaxMsgsPerSubject > 0, got.MaxAge > 0, got.MaxMsgs > 0, got.MaxBytes > 0,
		!got.AllowAtomicPublish, got.AllowDirect, len(got.Subjects) != 1 || got.Subjects[0] != cfg.Subjects[0]:
		return &UnavailableError{URL: s.url, Reason: fmt.Sprintf("stream %s exists with a configuration natsstore cannot use "+
			"(it needs file storage, discard new, no limits, atomic publish, no direct get, subjects %s)", cfg.Name, cfg.Subjects[0]),
			Fix: "use another prefix, or fix or remove the stream"}
	}
	s.ledgers = st

	bucket := func(name, desc string) (jetstream.KeyValue, error) {
		kv, err := s.js.KeyValue(ctx, name)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = s.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket: name, Description: desc, History: 1,
				Storage: jetstream.FileStorage, Replicas: s.o.replicas,
			})
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = s.js.KeyValue(ctx, name)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("natsstore: bucket %s: %w", name, err)
		}
		return kv, nil
	}
	if s.catalog, err = bucket(s.prefix+"-catalog", "looprig catalog"); err != nil {
		return err
	}
	if s.leaseKV, err = bucket(s.prefix+"-leases", "looprig leases"); err != nil {
		return err
	}
	return s.setupBlobs(ctx)
}

// URL returns the store's URL, without credentials.
func (s *Store) URL() string { return s.url }

// LocalDir returns "": a Store keeps its journals, leases and catalog on
// the NATS server, not on this machine (storage.Store). That holds even
// when the server runs in this process (natsstore/embedded): Open only
// connects to a URL, so the Store never runs the server and does not know
// where it stores.
func (s *Store) LocalDir() string { return "" }

// Prefix returns the prefix naming the stream, buckets and subjects.
func (s *Store) Prefix() string { return s.prefix }

// Close stops this Store's lease heartbeats (its leases are lost: nothing
// renews them, and other Stores may take them at once) and closes the
// connection. It does not release leases.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var all []*lease
	for _, ls := range s.held {
		all = append(all, ls...)
	}
	s.mu.Unlock()
	for _, l := range all {
		l.lose(storage.LossUnknown, 0)
		l.stopHeartbeat()
	}
	s.bg.Wait()
	if s.presenceSub != nil {
		_ = s.presenceSub.Unsubscribe()
	}
	s.nc.Close()
	return nil
}

// testHooks change behaviour for tests.
type testHooks struct {
	// frozen models a hung holder: presence probes go unanswered and
	// heartbeats stop (the self-fence still fires).
	frozen bool
	// dropBatchMsg (1-based) leaves that message of a multi-message
	// append unsent, so that the server abandons the batch.
	dropBatchMsg int
	// maxMsg, when set, overrides the largest message published.
	maxMsg int
	// afterPublish, when set, runs after a publish was acknowledged; an
	// error it returns replaces the acknowledgement (a lost ack).
	afterPublish func() error
}

// opCtx bounds ctx by the per-request timeout.
func (s *Store) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.timeout)
}

// nameOpCtx begins an operation on name: it checks name and that ctx is
// not done, and returns opCtx(ctx) (cancel it when done).
func (s *Store) nameOpCtx(ctx context.Context, name string) (context.Context, context.CancelFunc, error) {
	if err := storage.ValidateName(name); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	octx, cancel := s.opCtx(ctx)
	return octx, cancel, nil
}

// isWrongLast reports a failed Nats-Expected-Last-Subject-Sequence check.
func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// ctxErr returns ctx's error when it is done, so that a cancelled call
// reports context.Canceled rather than a transport error.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}
