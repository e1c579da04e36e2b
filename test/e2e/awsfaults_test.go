package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// The APIs the injector tells apart, by how their requests look on the
// wire (pkg/fakeaws serves them all on one URL).
const (
	apiEC2     = "ec2"     // Query protocol, Version=2016-11-15
	apiIAM     = "iam"     // Query protocol, Version=2010-05-08
	apiSQS     = "sqs"     // AWS JSON 1.0, X-Amz-Target AmazonSQS.*
	apiSSM     = "ssm"     // AWS JSON 1.1, X-Amz-Target AmazonSSM.*
	apiPricing = "pricing" // AWS JSON 1.1, X-Amz-Target AWSPriceListService.*
	apiEKS     = "eks"     // REST-JSON, GET /clusters/{name}
)

// faultAPIs are the APIs the injector can fail, in the order figures list them.
var faultAPIs = []string{apiEC2, apiIAM, apiSQS, apiSSM, apiPricing, apiEKS}

const (
	ec2APIVersion = "2016-11-15"
	iamAPIVersion = "2010-05-08"
)

// classify names the API and operation of a request; "" for what the
// injector leaves alone (anything unknown).
func classify(r *http.Request, body []byte) (api, op string) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/clusters/") {
		return apiEKS, "DescribeCluster"
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, op, _ := strings.Cut(target, ".")
		switch prefix {
		case "AmazonSQS":
			return apiSQS, op
		case "AmazonSSM":
			return apiSSM, op
		case "AWSPriceListService":
			return apiPricing, op
		}
		return "", ""
	}
	if r.Method != http.MethodPost {
		return "", ""
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", ""
	}
	switch form.Get("Version") {
	case ec2APIVersion:
		return apiEC2, form.Get("Action")
	case iamAPIVersion:
		return apiIAM, form.Get("Action")
	}
	return "", ""
}

// faultRates are the shares of one API's calls answered with its
// throttling error and, of the calls not throttled, with its 5xx.
type faultRates struct{ throttle, fail float64 }

// apiCounts are one API's calls since the faults were last set.
type apiCounts struct {
	calls, throttled, failed int
	throttledBy              map[string]int // operation -> throttled calls
}

// awsFaults sits in front of the simulated AWS. It answers a share of each
// API's calls with that API's throttling error and a share with its 5xx, in
// the error shape the real service uses (injectedFault), delays every call
// of a faulted API by a latency with jitter, and runs a hook before and after
// each EC2 call so a test can kill the controller at a precise point of a
// launch or a termination. pkg/fakeaws's own injectors fail the next n
// calls; a share spread over a whole scale-up needs this one.
type awsFaults struct {
	mu    sync.Mutex
	rng   *rand.Rand
	rates map[string]faultRates
	// burst is how many of each API's first calls are throttled whatever
	// the dice say: a burst of RequestLimitExceeded as a throttled account
	// sees, so every API the controller calls meets at least one retry.
	burst int
	// latency plus up to jitter (uniform) delays each call of an API with
	// rates set, answered or failed.
	latency, jitter time.Duration
	// hook runs before (after=false) and after (after=true) an EC2 call is
	// served; before, returning true drops the call (the connection is cut,
	// as when the caller died).
	hook func(action string, after bool) (drop bool)

	count map[string]*apiCounts
	seq   int
}

func newAWSFaults(seed int64) *awsFaults {
	f := &awsFaults{rng: rand.New(rand.NewSource(seed))}
	f.resetLocked()
	return f
}

func (f *awsFaults) resetLocked() {
	f.count = map[string]*apiCounts{}
	for _, a := range faultAPIs {
		f.count[a] = &apiCounts{throttledBy: map[string]int{}}
	}
}

// setFaults makes share (0 to 1) of the EC2 calls from now on fail with
// RequestLimitExceeded and errShare of the others with InternalError, the
// other APIs untouched and no latency added, and resets the counters.
func (f *awsFaults) setFaults(share, errShare float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rates = map[string]faultRates{apiEC2: {share, errShare}}
	f.burst, f.latency, f.jitter = 0, 0, 0
	f.resetLocked()
}

// setAllFaults does the same on every API the controller calls, each with
// its own error shapes, throttles the first burst calls of each, and delays
// each of their calls by latency plus up to jitter.
func (f *awsFaults) setAllFaults(share, errShare float64, burst int, latency, jitter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rates = map[string]faultRates{}
	for _, a := range faultAPIs {
		f.rates[a] = faultRates{share, errShare}
	}
	f.burst, f.latency, f.jitter = burst, latency, jitter
	f.resetLocked()
}

func (f *awsFaults) setHook(h func(action string, after bool) bool) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

// counts are the EC2 calls seen, those throttled and those answered 500
// since the faults were set.
func (f *awsFaults) counts() (calls, throttled, failed int, by map[string]int) {
	c := f.countsOf(apiEC2)
	return c.calls, c.throttled, c.failed, c.throttledBy
}

// countsOf copies one API's counters.
func (f *awsFaults) countsOf(api string) apiCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.count[api]
	out := apiCounts{calls: c.calls, throttled: c.throttled, failed: c.failed, throttledBy: map[string]int{}}
	for k, v := range c.throttledBy {
		out.throttledBy[k] = v
	}
	return out
}

// byOperation lists the throttled operations, most first.
func (c apiCounts) byOperation() string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range c.throttledBy {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}

func (f *awsFaults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		api, op := classify(r, body)
		if api == "" {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		rates, faulted := f.rates[api]
		c := f.count[api]
		c.calls++
		throttle := faulted && c.calls <= f.burst || rates.throttle > 0 && f.rng.Float64() < rates.throttle
		if throttle {
			c.throttled++
			c.throttledBy[op]++
		}
		fail := !throttle && rates.fail > 0 && f.rng.Float64() < rates.fail
		if fail {
			c.failed++
		}
		var delay time.Duration
		if faulted {
			delay = f.latency
			if f.jitter > 0 {
				delay += time.Duration(f.rng.Int63n(int64(f.jitter)))
			}
		}
		f.seq++
		n := f.seq
		hook := f.hook
		f.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay) // latency is a property of the wire: real time
		}
		if throttle || fail {
			injectedFault(api, throttle).write(w, fmt.Sprintf("lab-fault-%d", n))
			return
		}
		if api != apiEC2 {
			next.ServeHTTP(w, r)
			return
		}
		if hook != nil && hook(op, false) {
			panic(http.ErrAbortHandler) // cut the connection without an answer
		}
		next.ServeHTTP(w, r)
		if hook != nil {
			// The answer reaches the caller before the hook runs.
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			hook(op, true)
		}
	})
}

// wireFault is an error answer as one API's protocol writes it.
type wireFault struct {
	api    string
	status int
	code   string // what the SDK reports as the error code
	msg    string
}

// injectedFault is the answer AWS gives when it throttles a call of api
// (throttle) or fails it on its side. The codes and statuses are the
// services' own (their SDK models and documented common errors):
//   - EC2 (Query, XML Response/Errors): RequestLimitExceeded on 503,
//     InternalError on 500;
//   - IAM (Query, XML ErrorResponse with a Type): Throttling "Rate
//     exceeded" on 400 (Sender), ServiceFailure on 500 (Receiver);
//   - SQS (JSON 1.0, query-compatible: x-amzn-query-error carries the
//     Query code and fault): RequestThrottled on 403, InternalFailure on 500;
//   - SSM (JSON 1.1): ThrottlingException on 400, InternalServerError on 500;
//   - Pricing (JSON 1.1): ThrottlingException on 429, InternalErrorException
//     on 500;
//   - EKS (REST-JSON, the code in X-Amzn-ErrorType and __type):
//     ThrottlingException on 429, ServerException on 500.
func injectedFault(api string, throttle bool) wireFault {
	type pair struct{ throttle, fail wireFault }
	p := map[string]pair{
		apiEC2: {wireFault{apiEC2, 503, "RequestLimitExceeded", "Request limit exceeded."},
			wireFault{apiEC2, 500, "InternalError", "An internal error has occurred."}},
		apiIAM: {wireFault{apiIAM, 400, "Throttling", "Rate exceeded"},
			wireFault{apiIAM, 500, "ServiceFailure", "The request processing has failed because of an unknown error, exception or failure."}},
		apiSQS: {wireFault{apiSQS, 403, "RequestThrottled", "Rate exceeded"},
			wireFault{apiSQS, 500, "InternalFailure", "The request processing has failed because of an unknown error, exception or failure."}},
		apiSSM: {wireFault{apiSSM, 400, "ThrottlingException", "Rate exceeded"},
			wireFault{apiSSM, 500, "InternalServerError", "An error occurred on the server side."}},
		apiPricing: {wireFault{apiPricing, 429, "ThrottlingException", "Rate exceeded"},
			wireFault{apiPricing, 500, "InternalErrorException", "An error on the server occurred during the processing of your request."}},
		apiEKS: {wireFault{apiEKS, 429, "ThrottlingException", "Rate exceeded"},
			wireFault{apiEKS, 500, "ServerException", "These errors are usually caused by a server-side issue."}},
	}[api]
	if throttle {
		return p.throttle
	}
	return p.fail
}

func (f wireFault) write(w http.ResponseWriter, rid string) {
	w.Header().Set("x-amzn-RequestId", rid)
	switch f.api {
	case apiEC2:
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(f.status)
		_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`, f.code, f.msg, rid)
	case apiIAM:
		typ := "Sender"
		if f.status >= 500 {
			typ = "Receiver"
		}
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(f.status)
		_, _ = fmt.Fprintf(w, `<ErrorResponse xmlns="https://iam.amazonaws.com/doc/%s/"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
			iamAPIVersion, typ, f.code, f.msg, rid)
	case apiSQS:
		fault := "Sender"
		if f.status >= 500 {
			fault = "Receiver"
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-query-error", f.code+";"+fault)
		w.WriteHeader(f.status)
		b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + f.code, "message": f.msg})
		_, _ = w.Write(b)
	case apiEKS:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", f.code)
		w.WriteHeader(f.status)
		b, _ := json.Marshal(map[string]string{"__type": f.code, "message": f.msg})
		_, _ = w.Write(b)
	default: // SSM and Pricing: AWS JSON 1.1
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(f.status)
		b, _ := json.Marshal(map[string]string{"__type": f.code, "message": f.msg})
		_, _ = w.Write(b)
	}
}
