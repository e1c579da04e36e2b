package aws

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
)

// smallPages makes DescribeInstances answer in pages of 5 (the provider asks
// for 500, more than a test launches) and, while failing is set, fails every
// page after the first: the answer arrives only in part.
type smallPages struct {
	failing atomic.Bool
	pages   atomic.Int32 // DescribeInstances calls that asked for a next page
}

func (s *smallPages) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if form.Get("Action") == "DescribeInstances" && form.Has("MaxResults") {
			form.Set("MaxResults", "5")
			if form.Get("NextToken") != "" {
				s.pages.Add(1)
				if s.failing.Load() {
					unavailableAnswer(rw)
					return
				}
			}
			body = []byte(form.Encode())
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		next.ServeHTTP(rw, r)
	})
}

// List, which garbage collection terminates orphans from, is all or
// nothing: a page that does not arrive fails the whole list, so no caller
// takes the instances on the lost pages for gone.
func TestListFailsOnAPartialAnswer(t *testing.T) {
	pg := &smallPages{}
	e := newEnv(t, envOpts{wrap: pg.wrap})
	const n = 12
	for i := range n {
		e.create(newClaim(fmt.Sprintf("p%02d", i)))
	}
	all, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n || pg.pages.Load() < 2 {
		t.Fatalf("List = %d instances over %d next pages, want %d over at least 2", len(all), pg.pages.Load(), n)
	}
	pg.failing.Store(true)
	got, err := e.p.List(e.ctx)
	if !cloudprovider.IsCloudUnavailable(err) || got != nil {
		t.Fatalf("List with lost pages = %d instances, %v; want none and CloudUnavailable", len(got), err)
	}
}
