package e2e

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"sync"
)

// ec2APIVersion tells EC2 Query calls from IAM's (2010-05-08), which share
// the form encoding.
const ec2APIVersion = "2016-11-15"

// awsFaults sits in front of the simulated AWS. It answers a share of EC2
// calls with RequestLimitExceeded (HTTP 503, the EC2 Query error document),
// as EC2 does when an account is throttled, and runs a hook before and after
// each EC2 call so a test can kill the controller at a precise point of a
// launch or a termination. pkg/fakeaws's own injectors fail the next n
// calls; a share spread over a whole scale-up needs this one.
type awsFaults struct {
	mu    sync.Mutex
	rng   *rand.Rand
	share float64
	// errShare of the calls not throttled answer HTTP 500 InternalError.
	errShare float64
	// hook runs before (after=false) and after (after=true) an EC2 call is
	// served; before, returning true drops the call (the connection is cut,
	// as when the caller died).
	hook func(action string, after bool) (drop bool)

	calls, throttled, failed int
	throttledBy              map[string]int
}

func newAWSFaults(seed int64) *awsFaults {
	return &awsFaults{rng: rand.New(rand.NewSource(seed)), throttledBy: map[string]int{}}
}

// setFaults makes share (0 to 1) of the EC2 calls from now on fail with
// RequestLimitExceeded and errShare of the others with InternalError, and
// resets the counters.
func (f *awsFaults) setFaults(share, errShare float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.share, f.errShare, f.calls, f.throttled, f.failed = share, errShare, 0, 0, 0
	f.throttledBy = map[string]int{}
}

func (f *awsFaults) setHook(h func(action string, after bool) bool) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

// counts are the EC2 calls seen, those throttled and those answered 500
// since setFaults.
func (f *awsFaults) counts() (calls, throttled, failed int, by map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	by = map[string]int{}
	for k, v := range f.throttledBy {
		by[k] = v
	}
	return f.calls, f.throttled, f.failed, by
}

func (f *awsFaults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		action := ""
		if r.Header.Get("X-Amz-Target") == "" && r.Method == http.MethodPost {
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Version") == ec2APIVersion {
				action = form.Get("Action")
			}
		}
		if action == "" {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.calls++
		throttle := f.share > 0 && f.rng.Float64() < f.share
		if throttle {
			f.throttled++
			f.throttledBy[action]++
		}
		fail := !throttle && f.errShare > 0 && f.rng.Float64() < f.errShare
		if fail {
			f.failed++
		}
		n := f.throttled + f.failed
		hook := f.hook
		f.mu.Unlock()
		if fail {
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>InternalError</Code><Message>An internal error has occurred.</Message></Error></Errors><RequestID>lab-fault-%d</RequestID></Response>`, n)
			return
		}
		if throttle {
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>lab-fault-%d</RequestID></Response>`, n)
			return
		}
		if hook != nil && hook(action, false) {
			panic(http.ErrAbortHandler) // cut the connection without an answer
		}
		next.ServeHTTP(w, r)
		if hook != nil {
			// The answer reaches the caller before the hook runs.
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			hook(action, true)
		}
	})
}
