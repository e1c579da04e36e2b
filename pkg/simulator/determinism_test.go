package simulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodesmith/nodesmith/examples/scenarios"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// wireClient wraps the simulator's HTTP client, recording every request
// it carries (its target or action and a hash of its body) and, when max
// is set, adding a random real-time delay before each request: the wall clock then moves differently in every run, so
// anything in the simulated path that reads it instead of the virtual
// clock shows as a different sequence of calls or a different timeline.
type wireClient struct {
	next   aws.HTTPClient
	max    time.Duration
	mu     sync.Mutex
	rng    *rand.Rand
	trace  []string
	bodies []string
	errs   []string
}

func newWireClient(next aws.HTTPClient, maxDelay time.Duration) *wireClient {
	return &wireClient{next: next, max: maxDelay, rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
}

func (c *wireClient) delay() {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	d := time.Duration(c.rng.Int63n(int64(c.max) + 1))
	c.mu.Unlock()
	time.Sleep(d)
}

func (c *wireClient) Do(r *http.Request) (*http.Response, error) {
	// The body is hashed as the client reads it, and closing it closes the
	// SDK's: replacing it with a copy would change what is under test.
	var body *teeBody
	if r.Body != nil && r.Body != http.NoBody {
		body = &teeBody{ReadCloser: r.Body}
		r.Body = body
		if _, ok := body.ReadCloser.(io.WriterTo); ok {
			// net/http copies through WriteTo when the body has one, and
			// it answers differently once the SDK has closed the body.
			r.Body = teeWriterTo{body}
		}
	}
	// Only before the call: a delay between the answer and the SDK's
	// handling of it would give net/http's connection goroutine the time
	// it needs and hide the race fakeaws.InProcessClient is about.
	c.delay()
	resp, err := c.next.Do(r)
	// The EC2 Query protocol names the action in the body, which the
	// client has read by now when it serves in process.
	text := body.text()
	op := r.Header.Get("X-Amz-Target")
	if v, perr := url.ParseQuery(text); op == "" && perr == nil {
		op = v.Get("Action")
	}
	sum := sha256.Sum256([]byte(text))
	c.mu.Lock()
	c.trace = append(c.trace, fmt.Sprintf("%s %x", op, sum[:6]))
	c.bodies = append(c.bodies, text)
	c.mu.Unlock()
	if err != nil || resp.StatusCode >= 500 {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		c.mu.Lock()
		c.errs = append(c.errs, fmt.Sprintf("%s: status %d, %v", op, status, err))
		c.mu.Unlock()
	}
	if resp != nil && resp.Body != nil {
		resp.Body = &watchedBody{ReadCloser: resp.Body, c: c, op: op}
	}
	return resp, err
}

// teeBody keeps a copy of a request body as it is read.
type teeBody struct {
	io.ReadCloser
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.buf.Write(p[:n])
	b.mu.Unlock()
	return n, err
}

func (b *teeBody) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// teeWriterTo is a teeBody over a body with WriteTo.
type teeWriterTo struct{ *teeBody }

func (b teeWriterTo) WriteTo(w io.Writer) (int64, error) {
	return b.ReadCloser.(io.WriterTo).WriteTo(io.MultiWriter(w, b.teeBody))
}

// text is what was read so far.
func (b *teeBody) text() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchedBody records a failed read of an answer (the SDK retries those).
type watchedBody struct {
	io.ReadCloser
	c  *wireClient
	op string
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.c.mu.Lock()
		b.c.errs = append(b.c.errs, fmt.Sprintf("%s: reading the answer: %v", b.op, err))
		b.c.mu.Unlock()
	}
	return n, err
}

// stressCondition is one way of disturbing a run's wall clock and
// goroutine scheduling.
type stressCondition struct {
	name       string
	procs      int           // GOMAXPROCS during the run (0: unchanged)
	burners    int           // goroutines spinning on the CPU during the run
	maxLatency time.Duration // most random delay before each AWS request (0: none)
}

// burnCPU keeps n goroutines busy until stop is called.
func burnCPU(n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(i)
			for {
				select {
				case <-done:
					return
				default:
				}
				for j := 0; j < 1<<16; j++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				runtime.Gosched()
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// replayed is what one replay produced: the timeline, the launches, the
// requests to the simulated AWS in order, and the SDK's retries.
type replayed struct {
	csv      []byte
	launches string
	wire     []string
	bodies   []string
	wireErrs []string
	retries  int64
}

// replay runs a built-in scenario under cond.
func replay(t *testing.T, file string, cond stressCondition) replayed {
	t.Helper()
	if cond.procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cond.procs))
	}
	if cond.burners > 0 {
		defer burnCPU(cond.burners)()
	}
	var retries atomic.Int64
	opts := Options{onRetry: func(service, operation, reason string) {
		retries.Add(1)
		t.Logf("%s: SDK retry of %s %s (%s)", file, service, operation, reason)
	}}
	var wire *wireClient
	opts.wrapHTTP = func(next aws.HTTPClient) aws.HTTPClient {
		wire = newWireClient(next, cond.maxLatency)
		return wire
	}
	res, err := Run(context.Background(), loadExample(t, file), opts)
	if err != nil {
		t.Fatalf("%s under %s: %v", file, cond.name, err)
	}
	var b bytes.Buffer
	if err := output.WriteCSV(&b, res.Samples); err != nil {
		t.Fatal(err)
	}
	var launches strings.Builder
	for _, l := range res.Launches {
		fmt.Fprintf(&launches, "%+v\n", l)
	}
	return replayed{csv: b.Bytes(), launches: launches.String(), wire: wire.trace, bodies: wire.bodies, wireErrs: wire.errs, retries: retries.Load()}
}

// bodyDiff names the form fields (or shows the JSON bodies) where the
// i-th requests of two runs differ.
func bodyDiff(a, b []string, i int) string {
	if i >= len(a) || i >= len(b) {
		return ""
	}
	va, ea := url.ParseQuery(a[i])
	vb, eb := url.ParseQuery(b[i])
	if ea != nil || eb != nil || va.Get("Action") == "" {
		return fmt.Sprintf(" (bodies %.300q versus %.300q)", a[i], b[i])
	}
	var diffs []string
	for k := range va {
		if va.Get(k) != vb.Get(k) {
			diffs = append(diffs, fmt.Sprintf("%s=%q/%q", k, va.Get(k), vb.Get(k)))
		}
	}
	for k := range vb {
		if _, ok := va[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s=(none)/%q", k, vb.Get(k)))
		}
	}
	sort.Strings(diffs)
	return fmt.Sprintf(" (%s: %s)", va.Get("Action"), strings.Join(diffs, ", "))
}

// compare describes how b differs from a ("" when it does not).
func compare(a, b replayed) string {
	var out []string
	for i := 0; i < len(a.wire) || i < len(b.wire); i++ {
		if i >= len(a.wire) || i >= len(b.wire) || a.wire[i] != b.wire[i] {
			at := func(w []string) string {
				if i < len(w) {
					return strings.Join(w[max(i-3, 0):min(i+3, len(w))], " | ")
				}
				return "(end)"
			}
			out = append(out, fmt.Sprintf("AWS request %d of %d/%d differs: %s versus %s%s", i+1, len(a.wire), len(b.wire), at(a.wire), at(b.wire), bodyDiff(a.bodies, b.bodies, i)))
			break
		}
	}
	if a.launches != b.launches {
		out = append(out, "launches differ: "+firstDiff([]byte(a.launches), []byte(b.launches)))
	}
	if !bytes.Equal(a.csv, b.csv) {
		out = append(out, "timelines differ: "+firstDiff(a.csv, b.csv))
	}
	return strings.Join(out, "; ")
}

func golden(t *testing.T, file string) []byte {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", "golden", strings.TrimSuffix(file, ".yaml")+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestGoldenUnderStress replays ice-window (the scenario whose timeline
// once changed on a loaded machine) with eight Ps, more than this machine
// has cores: the timeline must match its golden byte for byte, no request
// may fail on the wire and the SDK must not retry anything (a retry is the
// wall clock deciding). When the simulator reached the simulated AWS over
// loopback TCP this failed on every run: the SDK retried CreateFleet and
// the catalog's Describe calls a few times per run (see
// fakeaws.InProcessClient).
func TestGoldenUnderStress(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a scenario")
	}
	const file = "ice-window.yaml"
	got := replay(t, file, stressCondition{name: "procs8", procs: 8})
	if want := golden(t, file); !bytes.Equal(got.csv, want) {
		t.Errorf("%s under stress differs from its golden: %s", file, firstDiff(want, got.csv))
	}
	for _, e := range got.wireErrs {
		t.Errorf("request failed: %s", e)
	}
	if got.retries > 0 {
		t.Errorf("the SDK retried %d calls to the simulated AWS", got.retries)
	}
}

// TestGoldenDeterminismStress replays every built-in scenario many times
// under each stress condition and diffs each timeline against its golden.
// It takes minutes, so it runs only with NODESMITH_STRESS=<replays per
// scenario and condition> (NODESMITH_STRESS_SCENARIOS narrows the
// scenarios, comma-separated file names without .yaml;
// NODESMITH_STRESS_CONDITIONS the conditions, by name):
//
//	NODESMITH_STRESS=5 go test ./pkg/simulator -run TestGoldenDeterminismStress -v -timeout 2h
func TestGoldenDeterminismStress(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NODESMITH_STRESS"))
	if n <= 0 {
		t.Skip("set NODESMITH_STRESS=<replays> to run")
	}
	var files []string
	only := map[string]bool{}
	for _, f := range strings.Split(os.Getenv("NODESMITH_STRESS_SCENARIOS"), ",") {
		if f != "" {
			only[f] = true
		}
	}
	entries, err := scenarios.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".yaml")
		if filepath.Ext(e.Name()) == ".yaml" && (len(only) == 0 || only[name]) {
			files = append(files, e.Name())
		}
	}
	conds := []stressCondition{
		{name: "procs1", procs: 1},
		{name: "procs8", procs: 8},
		{name: "burners", procs: 8, burners: 2},
		{name: "latency", procs: 2, maxLatency: time.Millisecond},
		{name: "latency+burners", procs: 1, burners: 2, maxLatency: time.Millisecond},
	}
	if c := os.Getenv("NODESMITH_STRESS_CONDITIONS"); c != "" {
		keep := conds[:0]
		for _, cond := range conds {
			if strings.Contains(","+c+",", ","+cond.name+",") {
				keep = append(keep, cond)
			}
		}
		conds = keep
	}
	mismatches, diverged, retried := 0, 0, 0
	for _, file := range files {
		want := golden(t, file)
		var first *replayed
		for _, cond := range conds {
			for i := 0; i < n; i++ {
				start := time.Now()
				got := replay(t, file, cond)
				ok := bytes.Equal(got.csv, want)
				t.Logf("%s %s #%d: golden=%v requests=%d failed=%d retries=%d (%s)", file, cond.name, i+1, ok, len(got.wire), len(got.wireErrs), got.retries, time.Since(start).Round(time.Millisecond))
				if !ok {
					mismatches++
					t.Errorf("%s under %s, replay %d: %s", file, cond.name, i+1, firstDiff(want, got.csv))
				}
				if got.retries > 0 || len(got.wireErrs) > 0 {
					retried++
					t.Errorf("%s under %s, replay %d: %d SDK retries, failed requests: %v", file, cond.name, i+1, got.retries, got.wireErrs)
				}
				if first == nil {
					first = &got
				} else if d := compare(*first, got); d != "" {
					diverged++
					t.Errorf("%s under %s, replay %d, against the first replay: %s", file, cond.name, i+1, d)
				}
			}
		}
	}
	t.Logf("%d replays: %d timelines differ from their golden, %d runs differ from their scenario's first run, %d runs had SDK retries", len(files)*len(conds)*n, mismatches, diverged, retried)
}
