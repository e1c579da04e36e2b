// Package docs checks the documents in docs/ against the code they quote.
//
// TestConformanceMatrix reads docs/conformance.md, the behaviour matrix
// against Karpenter's v1 documentation, and holds every row to what it
// claims: each reference in the test column names a test function that
// exists (and, after a slash, a case or step name that its package's tests
// spell), or a scenario or golden file that exists; a row without a test
// says "none" and may not claim more than "partial"; and the status counts
// at the top are the counts of the rows. Renaming a test, a table case or a
// lab step breaks this test until the matrix follows. Run with -update to
// rewrite the counts.
//
// Test-only package: no production code imports it.
package docs

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the status counts in docs/conformance.md")

const (
	root       = "../.."
	matrixPath = "docs/conformance.md"
	minRows    = 150
	countsOpen = "<!-- counts: written by go test ./test/docs -update -->"
	countsEnd  = "<!-- end counts -->"
)

// statuses are the values the status column may start with, in the order
// the counts table lists them.
var statuses = []string{"same", "differs on purpose", "partial", "not done"}

type row struct {
	line   int
	num    int
	status string
	tests  string
}

func TestConformanceMatrix(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, matrixPath))
	if err != nil {
		t.Fatalf("reading the matrix: %v", err)
	}
	rows, errs := parseRows(string(text))
	for _, e := range errs {
		t.Error(e)
	}
	if len(rows) < minRows {
		t.Errorf("%s has %d rows, want at least %d", matrixPath, len(rows), minRows)
	}
	idx := newTestIndex(t)
	for i, r := range rows {
		if r.num != i+1 {
			t.Errorf("line %d: row number %d, want %d (rows are numbered 1, 2, … in order)", r.line, r.num, i+1)
		}
		for _, e := range idx.checkCell(r) {
			t.Errorf("line %d (row %d): %s", r.line, r.num, e)
		}
	}

	want := countsBlock(rows)
	got, ok := between(string(text), countsOpen, countsEnd)
	switch {
	case !ok:
		t.Errorf("%s has no counts block (%q … %q)", matrixPath, countsOpen, countsEnd)
	case got != want && *update:
		out := strings.Replace(string(text), countsOpen+got+countsEnd, countsOpen+want+countsEnd, 1)
		if err := os.WriteFile(filepath.Join(root, matrixPath), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	case got != want:
		t.Errorf("the status counts in %s are stale; run go test ./test/docs -update, or write:\n%s", matrixPath, want)
	}
}

// parseRows returns the matrix rows: table lines whose first cell is a number.
func parseRows(text string) ([]row, []string) {
	var rows []row
	var errs []string
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(line, " | ")
		first := strings.TrimSpace(strings.TrimPrefix(cells[0], "|"))
		n, err := strconv.Atoi(first)
		if err != nil {
			continue // a header, a separator or another table
		}
		if len(cells) != 5 || !strings.HasSuffix(cells[4], " |") {
			errs = append(errs, fmt.Sprintf("line %d: row %d has %d cells, want 5 (#, behaviour, Nodesmith, status, test; no | inside a cell)", i+1, n, len(cells)))
			continue
		}
		for c, v := range cells[1:4] {
			if strings.TrimSpace(v) == "" {
				errs = append(errs, fmt.Sprintf("line %d: row %d has an empty cell %d", i+1, n, c+2))
			}
		}
		rows = append(rows, row{line: i + 1, num: n, status: strings.TrimSpace(cells[3]),
			tests: strings.TrimSpace(strings.TrimSuffix(cells[4], " |"))})
	}
	return rows, errs
}

// statusOf is the status a cell starts with, or "".
func statusOf(cell string) string {
	cell = strings.Trim(cell, "*")
	for _, s := range statuses {
		if cell == s || strings.HasPrefix(cell, s+":") {
			return s
		}
	}
	return ""
}

func countsBlock(rows []row) string {
	n := map[string]int{}
	for _, r := range rows {
		n[statusOf(r.status)]++
	}
	var b strings.Builder
	b.WriteString("\n\n| status | rows |\n|---|---|\n")
	for _, s := range statuses {
		fmt.Fprintf(&b, "| %s | %d |\n", s, n[s])
	}
	fmt.Fprintf(&b, "| total | %d |\n\n", len(rows))
	return b.String()
}

func between(s, open, end string) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// testIndex knows, per directory, the test functions its _test.go files
// declare and their text (for case and step names).
type testIndex struct {
	funcs map[string]map[string]bool
	text  map[string][]byte
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w*)\(`)

func newTestIndex(t *testing.T) *testIndex {
	idx := &testIndex{funcs: map[string]map[string]bool{}, text: map[string][]byte{}}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		if idx.funcs[dir] == nil {
			idx.funcs[dir] = map[string]bool{}
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			idx.funcs[dir][string(m[1])] = true
		}
		idx.text[dir] = append(append(idx.text[dir], b...), '\n')
		return nil
	})
	if err != nil {
		t.Fatalf("indexing tests: %v", err)
	}
	return idx
}

var ref = regexp.MustCompile("`([^`]+)`")

// checkCell checks a row's status against its test column and every
// reference in that column.
func (idx *testIndex) checkCell(r row) []string {
	var errs []string
	st := statusOf(r.status)
	if st == "" {
		errs = append(errs, fmt.Sprintf("status %q is none of %s", r.status, strings.Join(statuses, ", ")))
	}
	if why, ok := strings.CutPrefix(strings.Trim(r.status, "*"), "differs on purpose:"); st == "differs on purpose" && (!ok || strings.TrimSpace(why) == "") {
		errs = append(errs, "\"differs on purpose\" needs its why after a colon")
	}
	if r.tests == "none" {
		if st == "same" || st == "differs on purpose" {
			errs = append(errs, fmt.Sprintf("status %q with no test: a row no test checks is at most partial", st))
		}
		return errs
	}
	refs := ref.FindAllStringSubmatch(r.tests, -1)
	if len(refs) == 0 {
		errs = append(errs, fmt.Sprintf("test column %q names no test in backticks and is not \"none\"", r.tests))
	}
	for _, m := range refs {
		if e := idx.check(m[1]); e != "" {
			errs = append(errs, e)
		}
	}
	return errs
}

// check resolves one reference: "dir TestName", "dir TestName/case or step",
// or a file path.
func (idx *testIndex) check(s string) string {
	dir, rest, ok := strings.Cut(s, " ")
	if !ok {
		if _, err := os.Stat(filepath.Join(root, s)); err != nil {
			return fmt.Sprintf("%q: no such file (a file reference is a path from the repository root)", s)
		}
		return ""
	}
	name, sub, _ := strings.Cut(rest, "/")
	funcs, ok := idx.funcs[dir]
	if !ok {
		return fmt.Sprintf("%q: directory %s has no tests", s, dir)
	}
	if !funcs[name] {
		return fmt.Sprintf("%q: %s declares no func %s", s, dir, name)
	}
	if sub != "" && !bytes.Contains(idx.text[dir], []byte(strconv.Quote(sub))) {
		return fmt.Sprintf("%q: no test file in %s spells the case or step %q", s, dir, sub)
	}
	return ""
}

// TestCheckerCatchesBadRows proves the checks above can fail.
func TestCheckerCatchesBadRows(t *testing.T) {
	idx := newTestIndex(t)
	bad := []struct {
		name string
		r    row
	}{
		{"missing function", row{status: "same", tests: "`test/docs TestNoSuchThing`"}},
		{"missing case", row{status: "same", tests: "`test/docs TestConformanceMatrix/no such case`"}},
		{"missing directory", row{status: "same", tests: "`pkg/nowhere TestX`"}},
		{"missing file", row{status: "same", tests: "`examples/scenarios/nope.yaml`"}},
		{"no test but same", row{status: "same", tests: "none"}},
		{"no test but differs", row{status: "differs on purpose: because", tests: "none"}},
		{"differs without why", row{status: "differs on purpose", tests: "`test/docs TestConformanceMatrix`"}},
		{"unknown status", row{status: "done", tests: "`test/docs TestConformanceMatrix`"}},
		{"no backticks", row{status: "same", tests: "TestConformanceMatrix"}},
	}
	for _, c := range bad {
		if errs := idx.checkCell(c.r); len(errs) == 0 {
			t.Errorf("%s: row %+v passed", c.name, c.r)
		}
	}
	good := row{status: "partial: x", tests: "`test/docs TestConformanceMatrix`, `test/docs TestCheckerCatchesBadRows/missing case`, `docs/conformance.md`"}
	if errs := idx.checkCell(good); len(errs) != 0 {
		t.Errorf("a good row failed: %v", errs)
	}
	if rows, errs := parseRows("| 1 | a | b | same |\n"); len(errs) == 0 || len(rows) != 0 {
		t.Errorf("a row of four cells parsed: %v %v", rows, errs)
	}
	keys := make([]string, 0, len(idx.funcs))
	for k := range idx.funcs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !idx.funcs["pkg/scheduling"]["TestSolve"] {
		t.Errorf("the index missed pkg/scheduling TestSolve; directories seen: %v", keys)
	}
}
