package fakeaws_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// A body over the limit used to be cut at the limit and parsed as if it
// were the whole request; now it is refused whole.
func TestOversizedBodiesAreRefusedNotTruncated(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("a", fakeaws.MaxRequestBody)
	tests := []struct {
		name, target, ctype, body string
		code                      func(t *testing.T, body []byte) string
	}{
		{name: "EC2", ctype: "application/x-www-form-urlencoded", body: "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3Ax&Filter.1.Value.1=" + big, code: ec2Code},
		{name: "IAM", ctype: "application/x-www-form-urlencoded", body: "Action=GetInstanceProfile&Version=2010-05-08&InstanceProfileName=" + big, code: iamCode},
		{name: "SQS", target: "AmazonSQS.SendMessage", ctype: "application/x-amz-json-1.0", body: `{"QueueUrl":"x","MessageBody":"` + big + `"}`, code: jsonCode},
		{name: "SSM", target: "AmazonSSM.GetParameter", ctype: "application/x-amz-json-1.1", body: `{"Name":"` + big + `"}`, code: jsonCode},
	}
	// framings: with a Content-Length the server can refuse before reading;
	// a chunked body announces no length, so only counting what was read
	// tells a complete body from one cut at the limit.
	framings := []struct {
		name string
		body func(s string) io.Reader
	}{
		{"content-length", func(s string) io.Reader { return bytes.NewBufferString(s) }},
		{"chunked", func(s string) io.Reader { return struct{ io.Reader }{strings.NewReader(s)} }},
	}
	for _, tt := range tests {
		for _, f := range framings {
			t.Run(tt.name+"/"+f.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodPost, e.srv.URL(), f.body(tt.body))
				if err != nil {
					t.Fatal(err)
				}
				if f.name == "chunked" && req.ContentLength != 0 {
					t.Fatalf("the request announces %d bytes; it must go out chunked", req.ContentLength)
				}
				req.Header.Set("Content-Type", tt.ctype)
				if tt.target != "" {
					req.Header.Set("X-Amz-Target", tt.target)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusRequestEntityTooLarge || tt.code(t, b) != "RequestEntityTooLarge" {
					t.Fatalf("status %d body %.300s, want 413 RequestEntityTooLarge", resp.StatusCode, b)
				}
			})
		}
	}
}

func ec2Code(t *testing.T, b []byte) string {
	var doc struct {
		Code string `xml:"Errors>Error>Code"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("EC2 error does not parse: %v", err)
	}
	return doc.Code
}

func iamCode(t *testing.T, b []byte) string {
	var doc struct {
		Code string `xml:"Error>Code"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("IAM error does not parse: %v", err)
	}
	return doc.Code
}

func jsonCode(t *testing.T, b []byte) string {
	var doc struct {
		Type string `json:"__type"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JSON error does not parse: %v", err)
	}
	return doc.Type[strings.LastIndex(doc.Type, "#")+1:]
}
