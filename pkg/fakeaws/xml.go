package fakeaws

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// xmlw builds an XML response (EC2 and IAM). Element names are fixed by the
// callers; every value goes through escape.
type xmlw struct{ b strings.Builder }

func (x *xmlw) open(n string)  { x.b.WriteString("<" + n + ">") }
func (x *xmlw) close(n string) { x.b.WriteString("</" + n + ">") }

func (x *xmlw) leaf(n, v string) {
	x.b.WriteString("<" + n + ">")
	escape(&x.b, v)
	x.b.WriteString("</" + n + ">")
}

func (x *xmlw) leafInt(n string, v int)   { x.leaf(n, strconv.Itoa(v)) }
func (x *xmlw) leafBool(n string, v bool) { x.leaf(n, strconv.FormatBool(v)) }
func (x *xmlw) leafTime(n string, t time.Time) {
	x.leaf(n, ec2Time(t))
}
func (x *xmlw) leafPrice(n string, v float64) { x.leaf(n, strconv.FormatFloat(v, 'f', 6, 64)) }

func (x *xmlw) items(n string, vs []string) {
	x.open(n)
	for _, v := range vs {
		x.leaf("item", v)
	}
	x.close(n)
}

func (x *xmlw) tagSet(tags map[string]string) {
	x.open("tagSet")
	for _, k := range sortedKeys(tags) {
		x.open("item")
		x.leaf("key", k)
		x.leaf("value", tags[k])
		x.close("item")
	}
	x.close("tagSet")
}

// ec2Time is how EC2 writes timestamps, in responses and in filter values
// (launch-time, create-time): whole seconds with a ".000" fraction.
func ec2Time(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000Z")
}

// xmlChar reports whether XML 1.0 can carry r at all (its Char production):
// #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
// Characters outside it cannot appear even as character references, so
// "&#1;" is as fatal to a parser as a raw U+0001.
func xmlChar(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// escape writes s as XML character data. Markup characters become entities,
// CR a character reference (so parsers do not fold it into LF), and runes
// XML cannot carry — control characters, U+FFFE, U+FFFF, and bytes that are
// not UTF-8 — become U+FFFD, so that one odd tag value cannot make a whole
// response unparseable.
func escape(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		case r == '\r':
			b.WriteString("&#13;")
		case !xmlChar(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
}

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// ec2Doc wraps a body in <ActionResponse> with a request id.
func ec2Doc(action, requestID string, body func(x *xmlw)) string {
	var x xmlw
	x.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	x.b.WriteString(fmt.Sprintf(`<%sResponse xmlns="%s">`, action, ec2Namespace))
	x.leaf("requestId", requestID)
	body(&x)
	x.close(action + "Response")
	return x.b.String()
}

// ec2ErrorDoc renders the EC2 error shape.
func ec2ErrorDoc(code, msg, requestID string) string {
	var x xmlw
	x.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	x.open("Response")
	x.open("Errors")
	x.open("Error")
	x.leaf("Code", code)
	x.leaf("Message", msg)
	x.close("Error")
	x.close("Errors")
	x.leaf("RequestID", requestID)
	x.close("Response")
	return x.b.String()
}
