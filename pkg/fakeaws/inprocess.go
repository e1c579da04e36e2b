package fakeaws

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
)

// InProcessClient carries the SDK's HTTP requests to a Server's handler on
// the caller's goroutine, without a socket: set it as aws.Config.HTTPClient
// (next to BaseEndpoint = the server's URL) and every call is serialized,
// served and deserialized exactly as over the loopback server, but nothing
// else runs meanwhile.
//
// The simulator needs this to be repeatable. Over TCP, net/http writes each
// request from a connection goroutine, and smithy-go closes the request
// body as soon as the answer's headers arrive; when that goroutine is
// scheduled late (a loaded machine) its last read of the closed body fails,
// the transport tears the connection down under the answer's body, and the
// SDK retries the call with "use of closed network connection"
// (aws/aws-sdk-go-v2#2737). Three such failures in a row fail the call, and
// a retried call that is not idempotent (SendMessageBatch, ReceiveMessage)
// changes the world: the wall clock and the goroutine scheduler would be
// deciding. Here the whole body is read before the handler runs, and the
// answer is complete before Do returns.
type InProcessClient struct {
	h http.Handler
}

// InProcess returns a client serving requests with this server's handler.
// The server need not be started; BaseEndpoint must still be an http URL,
// whose host the answers use where AWS names itself (queue URLs).
func (s *Server) InProcess() *InProcessClient { return &InProcessClient{h: s} }

// Do serves r and returns the complete answer. It fails only when r's body
// cannot be read, as a transport fails when it cannot send one.
func (c *InProcessClient) Do(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		body = b
	}
	// The handler sees what a server would: the Host, the path and query as
	// the request line carried them, and a body it may read at its pace.
	in := r.Clone(r.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	in.Host = r.URL.Host
	if r.Host != "" {
		in.Host = r.Host
	}
	in.RequestURI = r.URL.RequestURI()
	in.RemoteAddr = "in-process"
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
