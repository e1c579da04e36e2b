package fakeaws

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeAll parses doc to the end with encoding/xml, which rejects every
// character XML 1.0 cannot carry, and returns the text of the first element.
func decodeAll(t *testing.T, doc string) string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return text.String()
		}
		if err != nil {
			t.Fatalf("response does not parse: %v\n%q", err, doc)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
}

func TestEscapeKeepsResponsesParseable(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "node-a", "node-a"},
		{"markup", `<a href="x">&'`, `<a href="x">&'`},
		{"carriage return survives", "a\r\nb", "a\r\nb"},
		{"tab and newline", "a\tb\nc", "a\tb\nc"},
		{"U+0001, the tag that broke DescribeInstances", "bell\x01ring", "bell\uFFFDring"},
		{"NUL", "a\x00b", "a\uFFFDb"},
		{"every C0 control but tab, LF, CR", "\x02\x08\x0b\x0c\x0e\x1f", strings.Repeat("\uFFFD", 6)},
		{"U+FFFE and U+FFFF", "a\uFFFEb\uFFFFc", "a\uFFFDb\uFFFDc"},
		{"bytes that are not UTF-8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
		{"astral plane", "🚀 ünï", "🚀 ünï"},
		{"U+007F and C1 controls are legal XML", "\x7f\u0085", "\x7f\u0085"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var x xmlw
			x.leaf("value", tt.in)
			if got := decodeAll(t, x.b.String()); got != tt.want {
				t.Fatalf("round trip %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEscapeEveryBMPRune(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r <= 0xFFFF; r++ {
		if utf8.ValidRune(r) {
			b.WriteRune(r)
		}
	}
	var x xmlw
	x.leaf("all", b.String())
	decodeAll(t, x.b.String())
}
